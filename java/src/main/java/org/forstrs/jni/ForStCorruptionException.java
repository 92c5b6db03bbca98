package org.forstrs.jni;

import java.io.IOException;

/**
 * Stored bytes are not what was written: a bad checksum, bad magic or a truncated file. The
 * message names the file and the offset. Thrown from native code; retrying does not help, the
 * state must come from a checkpoint.
 */
public class ForStCorruptionException extends IOException {

    private static final long serialVersionUID = 1L;

    public ForStCorruptionException(String message) {
        super(message);
    }
}
