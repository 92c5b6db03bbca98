/**
 * The Java side of the file-system proxy: the native engine reaches any Flink {@link
 * org.apache.flink.core.fs.FileSystem} (HDFS, OSS, anything with a Flink plugin) through these
 * classes. Native code (rust/storage/flink_proxy/) calls them over JNI with path strings and direct
 * {@link java.nio.ByteBuffer}s over native memory; nothing else in Java uses them.
 */
package org.forstrs.fs;
