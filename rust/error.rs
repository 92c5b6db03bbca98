//! One error type for every layer below the JNI bridge. The JNI layer maps the variants to Java
//! exceptions (Io -> IOException, InvalidArgument -> IllegalArgumentException, Closed ->
//! IllegalStateException), so each variant carries enough text to stand alone in a stack trace.
use std::fmt;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A storage call failed (network, permission, missing file, injected fault...).
    #[error("I/O error on {path}: {message}")]
    Io { path: String, message: String },
    /// A file exists but its bytes are not what was written: bad checksum, bad magic, truncation.
    #[error("corruption in {file} at offset {offset}: {message}")]
    Corruption { file: String, offset: u64, message: String },
    /// The file does not exist.
    #[error("not found: {0}")]
    NotFound(String),
    /// The caller passed something the engine cannot accept.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The database (or a handle into it) was closed.
    #[error("closed: {0}")]
    Closed(String),
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub fn io(path: impl fmt::Display, message: impl fmt::Display) -> Self {
        Error::Io { path: path.to_string(), message: message.to_string() }
    }

    pub fn corruption(file: impl fmt::Display, offset: u64, message: impl fmt::Display) -> Self {
        Error::Corruption { file: file.to_string(), offset, message: message.to_string() }
    }

    pub fn invalid(message: impl fmt::Display) -> Self {
        Error::InvalidArgument(message.to_string())
    }
}
