//! [`ProxyWriter`]: a file written sequentially through a Java `FlinkFsWriter`. Small writes are
//! gathered in native memory and handed to Java in large pieces (one JNI call per piece).

use std::sync::Arc;

use ::jni::sys::jvalue;
use async_trait::async_trait;
use bytes::Bytes;

use super::java::{self, JavaRef, VOID};
use super::storage::Inner;
use crate::storage::{FileWriter, io_runtime};
use crate::{Error, Result};

/// Bytes gathered before one JNI write; the engine hands over blocks of a few KiB.
const WRITE_BUFFER_BYTES: usize = 1 << 20;

pub(super) struct ProxyWriter {
    storage: Arc<Inner>,
    rel: String,
    url: String,
    /// None once finished or aborted.
    writer: Option<Arc<JavaRef>>,
    buffer: Vec<u8>,
    len: u64,
}

impl ProxyWriter {
    pub fn new(storage: Arc<Inner>, rel: String, url: String, writer: JavaRef) -> Self {
        Self { storage, rel, url, writer: Some(Arc::new(writer)), buffer: Vec::new(), len: 0 }
    }

    fn open_writer(&self, what: &str) -> Result<Arc<JavaRef>> {
        self.writer
            .clone()
            .ok_or_else(|| Error::io(&self.url, format!("{what} after finish or abort")))
    }

    /// Hands `data` to Java on the blocking pool.
    async fn write_through(&self, writer: Arc<JavaRef>, data: Bytes) -> Result<()> {
        let url = self.url.clone();
        let job = move || write_java(&writer, &url, &data);
        io_runtime()
            .spawn_blocking(job)
            .await
            .map_err(|e| Error::io(&self.url, format!("write failed: {e}")))?
    }

    async fn flush_buffer(&mut self, writer: &Arc<JavaRef>) -> Result<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        let data = Bytes::from(std::mem::take(&mut self.buffer));
        self.write_through(writer.clone(), data).await
    }
}

fn write_java(writer: &JavaRef, url: &str, data: &Bytes) -> Result<()> {
    let length = i32::try_from(data.len()).map_err(|_| {
        Error::invalid(format!("write of {} bytes to {url}: too large", data.len()))
    })?;
    java::call(url, "write", |env, c| {
        // SAFETY: the buffer covers `data`, which outlives the call; Java only reads it
        // (FlinkFsWriter.write copies it into the stream) and keeps no reference after returning.
        let buffer = unsafe { env.new_direct_byte_buffer(data.as_ptr() as *mut u8, data.len())? };
        // SAFETY: writer_write is FlinkFsWriter.write(ByteBuffer, int)V.
        unsafe {
            env.call_method_unchecked(
                writer.as_obj(),
                c.writer_write,
                VOID,
                &[jvalue { l: buffer.as_raw() }, jvalue { i: length }],
            )?
        };
        Ok(())
    })
}

/// Calls `finish()V` or `abort()V` of a FlinkFsWriter.
fn end_java(writer: &JavaRef, url: &str, finish: bool) -> Result<()> {
    java::call(url, if finish { "finish" } else { "abort" }, |env, c| {
        let method = if finish { c.writer_finish } else { c.writer_abort };
        // SAFETY: both are no-argument void methods of FlinkFsWriter.
        unsafe { env.call_method_unchecked(writer.as_obj(), method, VOID, &[])? };
        Ok(())
    })
}

#[async_trait]
impl FileWriter for ProxyWriter {
    async fn write(&mut self, data: Bytes) -> Result<()> {
        let writer = self.open_writer("write")?;
        if self.buffer.len() + data.len() > WRITE_BUFFER_BYTES {
            self.flush_buffer(&writer).await?;
        }
        self.len += data.len() as u64;
        if data.len() >= WRITE_BUFFER_BYTES {
            return self.write_through(writer, data).await;
        }
        if self.buffer.capacity() == 0 {
            self.buffer.reserve_exact(WRITE_BUFFER_BYTES);
        }
        self.buffer.extend_from_slice(&data);
        Ok(())
    }

    fn held_bytes(&mut self) -> u64 {
        self.buffer.capacity() as u64
    }

    async fn finish(mut self: Box<Self>) -> Result<u64> {
        let writer = self.open_writer("finish")?;
        let flushed = self.flush_buffer(&writer).await;
        self.writer = None;
        let url = self.url.clone();
        let finished = io_runtime()
            .spawn_blocking(move || match flushed {
                Ok(()) => end_java(&writer, &url, true),
                Err(e) => {
                    let _ = end_java(&writer, &url, false);
                    Err(e)
                }
            })
            .await
            .map_err(|e| Error::io(&self.url, format!("finish failed: {e}")))?;
        self.storage.replaced(&self.rel);
        finished.map(|()| self.len)
    }

    async fn abort(mut self: Box<Self>) -> Result<()> {
        let Some(writer) = self.writer.take() else { return Ok(()) };
        let url = self.url.clone();
        io_runtime()
            .spawn_blocking(move || end_java(&writer, &url, false))
            .await
            .map_err(|e| Error::io(&self.url, format!("abort failed: {e}")))?
    }
}

impl Drop for ProxyWriter {
    fn drop(&mut self) {
        // Dropped unfinished (error path, panic): delete the temporary file in the background.
        if let Some(writer) = self.writer.take() {
            let url = std::mem::take(&mut self.url);
            drop(io_runtime().spawn_blocking(move || end_java(&writer, &url, false)));
        }
    }
}
