package org.forstrs.fs;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.MiniDFSCluster;

import java.io.IOException;

/**
 * A real HDFS in this JVM (Hadoop's MiniDFSCluster: one namenode and its datanodes), listening on
 * 127.0.0.1 only, with data under a test directory.
 */
public final class HdfsCluster implements AutoCloseable {

    private final MiniDFSCluster cluster;

    private HdfsCluster(MiniDFSCluster cluster) {
        this.cluster = cluster;
    }

    /** Starts a cluster with {@code dataNodes} datanodes and replication 1. */
    public static HdfsCluster start(java.nio.file.Path baseDir, int dataNodes) throws IOException {
        Configuration conf = new Configuration();
        conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, baseDir.toAbsolutePath().toString());
        conf.set("dfs.namenode.http-address", "127.0.0.1:0");
        conf.set("dfs.namenode.https-address", "127.0.0.1:0");
        conf.set("dfs.namenode.secondary.http-address", "127.0.0.1:0");
        conf.set("dfs.replication", "1");
        // Deleted files' blocks leave the datanodes within about a second.
        conf.set("dfs.heartbeat.interval", "1");
        conf.setBoolean("dfs.permissions.enabled", true);
        MiniDFSCluster cluster =
                new MiniDFSCluster.Builder(conf).numDataNodes(dataNodes).format(true).build();
        cluster.waitActive();
        return new HdfsCluster(cluster);
    }

    /** {@code hdfs://127.0.0.1:<port><path>}. */
    public String uri(String path) {
        return "hdfs://127.0.0.1:" + cluster.getNameNodePort() + path;
    }

    public int nameNodePort() {
        return cluster.getNameNodePort();
    }

    public MiniDFSCluster cluster() {
        return cluster;
    }

    @Override
    public void close() {
        cluster.shutdown(true);
    }
}
