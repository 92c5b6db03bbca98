package org.forstrs.flink.restore;

import org.forstrs.jni.ForStNative;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

/**
 * Checkpointed SSTs that are not files the engine can open in place (bytes the JobManager keeps,
 * segments of merged checkpoint files), written as files into a staging directory of the DB being
 * restored, so that the native restore takes them like any other file (it copies them into the DB
 * inside the storage). {@link #close()} deletes them again: the restored DB has its own copies.
 */
final class RestoreStaging implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(RestoreStaging.class);

    /** Below the DB directory, which the DB itself never lists (it reads only its top level). */
    static final String DIRECTORY = "restore-staging";

    private final String dirUri;
    private final String[] nativeOptions;
    private final List<String> staged = new ArrayList<>();

    RestoreStaging(String dbUri, String[] nativeOptions) {
        this.dirUri = dbUri + "/" + DIRECTORY;
        this.nativeOptions = nativeOptions;
    }

    /** Writes {@code in} (read to its end, not closed) as a new file; returns the file's URI. */
    String stage(InputStream in) throws IOException {
        String name = UUID.randomUUID() + ".sst";
        try (NativeFileOutputStream out = new NativeFileOutputStream(dirUri, nativeOptions, name)) {
            in.transferTo(out);
            out.finish();
        }
        staged.add(name);
        return dirUri + "/" + name;
    }

    /** Whether {@code uri} is a file staged here (the DB takes it in as its own). */
    boolean holds(String uri) {
        return uri.startsWith(dirUri + "/");
    }

    /** How many files were staged. */
    int size() {
        return staged.size();
    }

    @Override
    public void close() {
        for (String name : staged) {
            try {
                ForStNative.fileDelete(dirUri, nativeOptions, name);
            } catch (Exception e) {
                // Only space is lost: the directory goes with the DB's.
                LOG.warn("Could not delete staged restore file {}/{}", dirUri, name, e);
            }
        }
        staged.clear();
    }
}
