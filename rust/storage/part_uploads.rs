//! A multipart upload that knows the memory it holds: the part being filled and the parts still
//! uploading, so the engine can charge them to its memory budget (object_store's `WriteMultipart`
//! does not say). Parts are cut at exactly `part_size` bytes, without copying; only the last one
//! may be shorter (some stores want equal parts).

use bytes::Bytes;
use object_store::{MultipartUpload, PutPayload};
use tokio::task::{JoinError, JoinSet};

type PartResult = (usize, object_store::Result<()>);

pub(super) struct PartUploads {
    upload: Box<dyn MultipartUpload>,
    part_size: usize,
    filling: Vec<Bytes>,
    filling_bytes: usize,
    /// Each task yields its part's size, so the bytes in flight are known when it ends.
    uploading: JoinSet<PartResult>,
    uploading_bytes: usize,
    /// A part that failed while nobody waited; the next wait reports it.
    failed: Option<object_store::Error>,
}

impl PartUploads {
    pub(super) fn new(upload: Box<dyn MultipartUpload>, part_size: usize) -> Self {
        PartUploads {
            upload,
            part_size,
            filling: Vec::new(),
            filling_bytes: 0,
            uploading: JoinSet::new(),
            uploading_bytes: 0,
            failed: None,
        }
    }

    /// Appends `data`, starting the upload of every part it completes. Must run inside a Tokio
    /// runtime (parts upload as tasks).
    pub(super) fn put(&mut self, mut data: Bytes) {
        while !data.is_empty() {
            let room = self.part_size - self.filling_bytes;
            let piece =
                if data.len() > room { data.split_to(room) } else { std::mem::take(&mut data) };
            self.filling_bytes += piece.len();
            self.filling.push(piece);
            if self.filling_bytes == self.part_size {
                self.start_part();
            }
        }
    }

    fn start_part(&mut self) {
        let size = std::mem::take(&mut self.filling_bytes);
        let payload: PutPayload = std::mem::take(&mut self.filling).into_iter().collect();
        let part = self.upload.put_part(payload);
        self.uploading_bytes += size;
        self.uploading.spawn(async move { (size, part.await) });
    }

    /// Bytes held in memory: the part being filled and the parts not yet acknowledged.
    pub(super) fn held_bytes(&mut self) -> u64 {
        while let Some(ended) = self.uploading.try_join_next() {
            if let Err(e) = self.settle(ended) {
                self.failed.get_or_insert(e);
            }
        }
        (self.filling_bytes + self.uploading_bytes) as u64
    }

    /// Waits until fewer than `max` parts are uploading (0: none); fails with the first failed
    /// part.
    pub(super) async fn wait_for_room(&mut self, max: usize) -> object_store::Result<()> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        while !self.uploading.is_empty() && self.uploading.len() >= max {
            let ended = self.uploading.join_next().await.expect("a part is uploading");
            self.settle(ended)?;
        }
        Ok(())
    }

    fn settle(&mut self, ended: Result<PartResult, JoinError>) -> object_store::Result<()> {
        let (size, result) = ended.map_err(|source| object_store::Error::JoinError { source })?;
        self.uploading_bytes -= size;
        result
    }

    /// Uploads the last part and completes the upload; on failure aborts it, so the store frees
    /// the parts.
    pub(super) async fn finish(mut self) -> object_store::Result<()> {
        if self.filling_bytes > 0 {
            self.start_part();
        }
        let completed = match self.wait_for_room(0).await {
            Ok(()) => self.upload.complete().await.map(drop),
            Err(e) => Err(e),
        };
        if completed.is_err() {
            let _ = self.abort().await;
        }
        completed
    }

    pub(super) async fn abort(mut self) -> object_store::Result<()> {
        self.uploading.shutdown().await;
        self.upload.abort().await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use async_trait::async_trait;
    use futures::FutureExt;
    use object_store::{PutResult, UploadPart};
    use tokio::sync::Semaphore;

    use super::*;

    /// Records part sizes; each part completes once the test adds a permit.
    #[derive(Debug)]
    struct GatedUpload {
        parts: Arc<Mutex<Vec<usize>>>,
        gate: Arc<Semaphore>,
        fail_parts: bool,
    }

    #[async_trait]
    impl MultipartUpload for GatedUpload {
        fn put_part(&mut self, data: PutPayload) -> UploadPart {
            let (parts, gate, fail) = (self.parts.clone(), self.gate.clone(), self.fail_parts);
            async move {
                gate.acquire().await.expect("gate open").forget();
                parts.lock().unwrap().push(data.content_length());
                if fail {
                    return Err(object_store::Error::NotImplemented {
                        operation: "part".into(),
                        implementer: "test".into(),
                    });
                }
                Ok(())
            }
            .boxed()
        }

        async fn complete(&mut self) -> object_store::Result<PutResult> {
            Ok(PutResult { e_tag: None, version: None, extensions: Default::default() })
        }

        async fn abort(&mut self) -> object_store::Result<()> {
            Ok(())
        }
    }

    fn gated(fail_parts: bool) -> (PartUploads, Arc<Mutex<Vec<usize>>>, Arc<Semaphore>) {
        let parts = Arc::new(Mutex::new(Vec::new()));
        let gate = Arc::new(Semaphore::new(0));
        let upload = GatedUpload { parts: parts.clone(), gate: gate.clone(), fail_parts };
        (PartUploads::new(Box::new(upload), 100), parts, gate)
    }

    #[test]
    fn held_bytes_count_the_filling_part_and_the_parts_in_flight_until_acknowledged() {
        crate::storage::block_on(async {
            let (mut uploads, parts, gate) = gated(false);
            uploads.put(Bytes::from(vec![1; 250]));
            // Two parts of 100 uploading (held at the gate), 50 bytes filling.
            assert_eq!(uploads.held_bytes(), 250);
            gate.add_permits(1);
            uploads.wait_for_room(2).await.unwrap();
            assert_eq!(uploads.held_bytes(), 150);
            gate.add_permits(2);
            uploads.finish().await.unwrap();
            // Parts in flight together finish in any order (their numbers, not their
            // completion, place them in the object).
            let mut sizes = parts.lock().unwrap().clone();
            sizes.sort_unstable();
            assert_eq!(sizes, [50, 100, 100]);
        });
    }

    #[test]
    fn a_failed_part_fails_the_next_wait_and_the_finish() {
        crate::storage::block_on(async {
            let (mut uploads, _, gate) = gated(true);
            uploads.put(Bytes::from(vec![1; 100]));
            gate.add_permits(10);
            assert!(uploads.wait_for_room(0).await.is_err());
            let (mut uploads, _, gate) = gated(true);
            uploads.put(Bytes::from(vec![1; 150]));
            gate.add_permits(10);
            assert!(uploads.finish().await.is_err());
        });
    }
}
