//! One error type for every layer below the JNI bridge. Each error has a [`ErrorKind`] that says
//! what a caller can do about it (retry, give up, fix its input) and keeps the error it came from
//! (a `std::io`, object_store or Java error) as its source. The JNI layer maps kinds to Java
//! exception types (`jni::guard`); every message carries its cause's text, so it stands alone in a
//! stack trace.
use std::error::Error as StdError;
use std::fmt;
use std::sync::Arc;

/// What went wrong, as far as a caller's next step is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// May succeed if tried again: a timeout, a dropped or refused connection, a server error,
    /// throttling.
    Transient,
    NotFound,
    PermissionDenied,
    AlreadyExists,
    /// Stored bytes are not what was written: bad checksum, bad magic, truncation.
    Corruption,
    /// The caller passed something the engine cannot accept.
    InvalidArgument,
    /// The database (or a handle into it) was closed, or refuses calls after a failure.
    Closed,
    /// Any other failure; trying again will not help.
    Other,
}

impl ErrorKind {
    /// The kind of an operating-system error.
    pub fn of_io(kind: std::io::ErrorKind) -> ErrorKind {
        use std::io::ErrorKind as Io;
        match kind {
            Io::NotFound => ErrorKind::NotFound,
            // Both refuse writes for good, whoever asks.
            Io::PermissionDenied | Io::ReadOnlyFilesystem => ErrorKind::PermissionDenied,
            Io::AlreadyExists => ErrorKind::AlreadyExists,
            Io::TimedOut
            | Io::ConnectionReset
            | Io::ConnectionAborted
            | Io::ConnectionRefused
            | Io::NotConnected
            | Io::BrokenPipe
            | Io::Interrupted
            | Io::WouldBlock
            | Io::UnexpectedEof
            | Io::HostUnreachable
            | Io::NetworkUnreachable
            | Io::NetworkDown
            | Io::ResourceBusy => ErrorKind::Transient,
            Io::InvalidInput => ErrorKind::InvalidArgument,
            _ => ErrorKind::Other,
        }
    }
}

/// The error an [`Error`] came from.
pub type Source = Arc<dyn StdError + Send + Sync + 'static>;

#[derive(Debug, Clone)]
pub enum Error {
    /// A storage call failed. `kind` is `Transient`, `PermissionDenied`, `AlreadyExists` or
    /// `Other` (a missing file is [`Error::NotFound`]).
    Io { kind: ErrorKind, path: String, message: String, source: Option<Source> },
    /// A file exists but its bytes are not what was written.
    Corruption { file: String, offset: u64, message: String },
    /// The file does not exist.
    NotFound(String),
    /// The caller passed something the engine cannot accept.
    InvalidArgument(String),
    /// The database (or a handle into it) was closed.
    Closed(String),
    /// The database stopped after a background error it could not recover from (a permanent
    /// one, or a transient one that outlasted its retries); every later call fails with this,
    /// whose source is that error.
    Failed(Arc<Error>),
    /// Engine work panicked (a bug): "<what> panicked: <the panic's text>". Work that runs for
    /// the database (flush, compaction, deletions, cache fills) fails the database with it.
    Panicked(String),
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// A storage failure that retrying will not fix.
    pub fn io(path: impl fmt::Display, message: impl fmt::Display) -> Self {
        Self::storage(ErrorKind::Other, path, message, None)
    }

    /// A storage failure that may go away if the call is tried again.
    pub fn transient(path: impl fmt::Display, message: impl fmt::Display) -> Self {
        Self::storage(ErrorKind::Transient, path, message, None)
    }

    /// A failure of a call on `path` of the given kind, caused by `source` (if any).
    pub fn storage(
        kind: ErrorKind,
        path: impl fmt::Display,
        message: impl fmt::Display,
        source: Option<Source>,
    ) -> Self {
        let caused = |text: String| match &source {
            Some(source) => format!("{text}{}", Chain(source.as_ref())),
            None => text,
        };
        match kind {
            ErrorKind::NotFound => Error::NotFound(caused(format!("{path} ({message})"))),
            ErrorKind::Corruption => Error::corruption(path, 0, caused(message.to_string())),
            ErrorKind::InvalidArgument => {
                Error::InvalidArgument(caused(format!("{path}: {message}")))
            }
            ErrorKind::Closed => Error::Closed(caused(format!("{path}: {message}"))),
            ErrorKind::Transient
            | ErrorKind::PermissionDenied
            | ErrorKind::AlreadyExists
            | ErrorKind::Other => {
                Error::Io { kind, path: path.to_string(), message: message.to_string(), source }
            }
        }
    }

    /// An operating-system error of a call on `path`; `what` says what was being done.
    pub fn from_io(path: impl fmt::Display, what: impl fmt::Display, e: std::io::Error) -> Self {
        Self::storage(ErrorKind::of_io(e.kind()), path, what, Some(Arc::new(e)))
    }

    pub fn corruption(file: impl fmt::Display, offset: u64, message: impl fmt::Display) -> Self {
        Error::Corruption { file: file.to_string(), offset, message: message.to_string() }
    }

    pub fn invalid(message: impl fmt::Display) -> Self {
        Error::InvalidArgument(message.to_string())
    }

    /// The panic of `what` whose payload is `payload` (as `catch_unwind` returns it).
    pub fn from_panic(what: impl fmt::Display, payload: &(dyn std::any::Any + Send)) -> Self {
        let text = if let Some(s) = payload.downcast_ref::<&str>() {
            s
        } else if let Some(s) = payload.downcast_ref::<String>() {
            s.as_str()
        } else {
            "(no message)"
        };
        Error::Panicked(format!("{what} panicked: {text}"))
    }

    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Io { kind, .. } => *kind,
            Error::Corruption { .. } => ErrorKind::Corruption,
            Error::NotFound(_) => ErrorKind::NotFound,
            Error::InvalidArgument(_) => ErrorKind::InvalidArgument,
            Error::Closed(_) | Error::Failed(_) => ErrorKind::Closed,
            Error::Panicked(_) => ErrorKind::Other,
        }
    }

    pub fn is_transient(&self) -> bool {
        self.kind() == ErrorKind::Transient
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io { kind, path, message, source } => {
                let what = match kind {
                    ErrorKind::Transient => "transient I/O error",
                    ErrorKind::PermissionDenied => "permission denied",
                    ErrorKind::AlreadyExists => "already exists",
                    _ => "I/O error",
                };
                write!(f, "{what} on {path}: {message}")?;
                match source {
                    Some(source) => write_chain(f, source.as_ref()),
                    None => Ok(()),
                }
            }
            Error::Corruption { file, offset, message } => {
                write!(f, "corruption in {file} at offset {offset}: {message}")
            }
            Error::NotFound(what) => write!(f, "not found: {what}"),
            Error::InvalidArgument(what) => write!(f, "invalid argument: {what}"),
            Error::Closed(what) => write!(f, "closed: {what}"),
            Error::Failed(cause) => {
                write!(f, "the database failed and refuses every call; cause: {cause}")
            }
            Error::Panicked(what) => f.write_str(what),
        }
    }
}

/// Displays the chain of `source` as [`write_chain`] does.
struct Chain<'a>(&'a (dyn StdError + 'static));

impl fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_chain(f, self.0)
    }
}

/// Appends the text of every error in the chain from `source` that an earlier one does not
/// already include (many errors repeat their source's text): Java and logs get one string that
/// holds the whole cause, e.g. the "connection refused" deep inside an HTTP client's error.
fn write_chain(f: &mut fmt::Formatter<'_>, source: &(dyn StdError + 'static)) -> fmt::Result {
    let mut written = String::new();
    let mut next = Some(source);
    while let Some(error) = next {
        let text = error.to_string();
        if !written.contains(&text) {
            write!(f, ": {text}")?;
            written.push_str(&text);
        }
        next = error.source();
    }
    Ok(())
}

impl StdError for Error {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match self {
            Error::Io { source: Some(source), .. } => Some(source.as_ref()),
            Error::Failed(cause) => Some(cause.as_ref()),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_errors_map_to_kinds_and_keep_their_source() {
        let cases = [
            (std::io::ErrorKind::NotFound, ErrorKind::NotFound),
            (std::io::ErrorKind::PermissionDenied, ErrorKind::PermissionDenied),
            (std::io::ErrorKind::AlreadyExists, ErrorKind::AlreadyExists),
            (std::io::ErrorKind::TimedOut, ErrorKind::Transient),
            (std::io::ErrorKind::ConnectionReset, ErrorKind::Transient),
            (std::io::ErrorKind::InvalidInput, ErrorKind::InvalidArgument),
            (std::io::ErrorKind::StorageFull, ErrorKind::Other),
        ];
        for (io_kind, kind) in cases {
            let e =
                Error::from_io("file:///d/x", "cannot open", std::io::Error::new(io_kind, "os"));
            assert_eq!(e.kind(), kind, "{io_kind:?}");
            let text = e.to_string();
            assert!(text.contains("file:///d/x") && text.contains("os"), "{text}");
        }
        let e = Error::from_io("p", "cannot write", std::io::Error::other("disk on fire"));
        let source = e.source().expect("the io error is the source");
        assert_eq!(source.to_string(), "disk on fire");
        assert!(!e.is_transient());
    }

    #[test]
    fn a_failed_database_names_its_cause() {
        let cause = Error::storage(ErrorKind::PermissionDenied, "s3://b/x", "put", None);
        let failed = Error::Failed(Arc::new(cause));
        assert_eq!(failed.kind(), ErrorKind::Closed);
        assert!(failed.to_string().contains("permission denied on s3://b/x"), "{failed}");
        let source = failed.source().unwrap().downcast_ref::<Error>().unwrap();
        assert_eq!(source.kind(), ErrorKind::PermissionDenied);
    }
}
