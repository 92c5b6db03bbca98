package org.forstrs.fs;

import org.apache.flink.core.fs.FSDataOutputStream;

import java.io.IOException;

/** An output stream passing every call to another; test file systems override what they change. */
public class ForwardingOutputStream extends FSDataOutputStream {

    protected final FSDataOutputStream out;

    public ForwardingOutputStream(FSDataOutputStream out) {
        this.out = out;
    }

    @Override
    public void write(int b) throws IOException {
        out.write(b);
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
        out.write(b, off, len);
    }

    @Override
    public long getPos() throws IOException {
        return out.getPos();
    }

    @Override
    public void flush() throws IOException {
        out.flush();
    }

    @Override
    public void sync() throws IOException {
        out.sync();
    }

    @Override
    public void close() throws IOException {
        out.close();
    }
}
