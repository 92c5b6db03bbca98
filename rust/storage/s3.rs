//! S3 connection settings and the store built from them. The Java side maps Flink's `s3.*` keys
//! (`s3.endpoint`, `s3.access-key`, ...) onto the storage keys of [`S3Options::set`]; what is not
//! set falls back to the `AWS_*` environment and then to instance or container credentials, as
//! object_store's `AmazonS3Builder::from_env` resolves them.

use std::fmt;
use std::time::Duration;

use object_store::aws::{AmazonS3, AmazonS3Builder, AmazonS3ConfigKey, S3ConditionalPut};
use object_store::{ClientConfigKey, RetryConfig};

use crate::{Error, Result};

/// S3's bounds of a multipart upload's part (all but the last).
const MIN_PART_SIZE: u64 = 5 << 20;
const MAX_PART_SIZE: u64 = 5 << 30;

/// How to reach S3 or an S3-compatible store (MinIO, Ceph, moto, ...).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct S3Options {
    /// `http(s)://host[:port]`; a bare `host[:port]` means https, as in Flink's S3 plugins.
    /// Plain http is allowed exactly when this endpoint says `http://`.
    pub endpoint: Option<String>,
    pub region: Option<String>,
    pub access_key_id: Option<String>,
    pub secret_access_key: Option<String>,
    /// `Some(true)`: the bucket in the path (`endpoint/bucket/key`), what MinIO and moto expect;
    /// `Some(false)`: in the host name (`bucket.endpoint/key`); `None`: the AWS environment's
    /// choice, path style by default (which AWS serves too).
    pub path_style: Option<bool>,
    /// Temporary credentials' session token, with the access and secret key.
    pub session_token: Option<String>,
    /// `Some(true)`: requests go unsigned (public buckets), whatever credentials are around.
    pub anonymous: Option<bool>,
    /// Server-side encryption of the objects written.
    pub encryption: Option<Encryption>,
    /// HTTP client timeouts and retries; `None`: object_store's defaults.
    pub connect_timeout: Option<Duration>,
    pub read_timeout: Option<Duration>,
    pub request_timeout: Option<Duration>,
    pub pool_idle_timeout: Option<Duration>,
    /// Retries of one request (0: none); `None`: object_store's 10.
    pub max_retries: Option<usize>,
    /// Multipart upload part size, within S3's 5 MiB..5 GiB; `None`: [`MULTIPART_PART_SIZE`].
    ///
    /// [`MULTIPART_PART_SIZE`]: super::MULTIPART_PART_SIZE
    pub part_size: Option<usize>,
    /// Parts of one file uploading at once (each is held in memory until sent).
    pub parts_in_flight: Option<usize>,
}

/// Server-side encryption, as S3 names it in `x-amz-server-side-encryption`.
#[derive(Clone, PartialEq, Eq)]
pub enum Encryption {
    /// No encryption header: the bucket's default applies.
    None,
    /// SSE-S3 (`AES256`).
    S3Managed,
    /// SSE-KMS (`aws:kms`), with the key's id, ARN or alias (none: the account's aws/s3 key).
    Kms(Option<String>),
    /// DSSE-KMS (`aws:kms:dsse`).
    DualKms(Option<String>),
    /// SSE-C: the base64 of a 256-bit key the client sends with every request.
    Customer(String),
}

impl S3Options {
    /// Sets one setting from its storage key: `s3.endpoint`, `s3.region`, `s3.access-key`,
    /// `s3.secret-key`, `s3.session-token`, `s3.path-style` and `s3.anonymous` (true or false),
    /// `s3.sse` (`none`, `AES256`, `aws:kms`, `aws:kms:dsse`, `sse-c`) with `s3.sse.kms-key-id`
    /// or `s3.sse.customer-key`, `s3.connect-timeout-ms`, `s3.read-timeout-ms`,
    /// `s3.request-timeout-ms`, `s3.pool-idle-timeout-ms`, `s3.max-retries`,
    /// `s3.multipart.part-size` (bytes) and `s3.multipart.parts-in-flight`. Returns false for
    /// other keys.
    pub fn set(&mut self, key: &str, value: &str) -> Result<bool> {
        let text = || Some(value.to_string());
        let millis =
            || parse_number(key, value, 1, u64::MAX).map(|ms| Some(Duration::from_millis(ms)));
        match key {
            "s3.endpoint" => self.endpoint = text(),
            "s3.region" => self.region = text(),
            "s3.access-key" => self.access_key_id = text(),
            "s3.secret-key" => self.secret_access_key = text(),
            "s3.session-token" => self.session_token = text(),
            "s3.path-style" => self.path_style = Some(super::open::parse_bool(key, value)?),
            "s3.anonymous" => self.anonymous = Some(super::open::parse_bool(key, value)?),
            "s3.sse" => self.set_encryption_type(key, value)?,
            "s3.sse.kms-key-id" | "s3.sse.customer-key" => self.set_encryption_key(key, value)?,
            "s3.connect-timeout-ms" => self.connect_timeout = millis()?,
            "s3.read-timeout-ms" => self.read_timeout = millis()?,
            "s3.request-timeout-ms" => self.request_timeout = millis()?,
            "s3.pool-idle-timeout-ms" => self.pool_idle_timeout = millis()?,
            "s3.max-retries" => {
                self.max_retries = Some(parse_number(key, value, 0, u32::MAX as u64)? as usize)
            }
            "s3.multipart.part-size" => {
                self.part_size =
                    Some(parse_number(key, value, MIN_PART_SIZE, MAX_PART_SIZE)? as usize)
            }
            "s3.multipart.parts-in-flight" => {
                self.parts_in_flight = Some(parse_number(key, value, 1, 1024)? as usize)
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// `s3.sse`: the type; a key given before (`s3.sse.kms-key-id`, ...) stays with it.
    fn set_encryption_type(&mut self, key: &str, value: &str) -> Result<()> {
        let kms_key = match &self.encryption {
            Some(Encryption::Kms(id) | Encryption::DualKms(id)) => id.clone(),
            _ => None,
        };
        let customer_key = match &self.encryption {
            Some(Encryption::Customer(k)) => k.clone(),
            _ => String::new(),
        };
        self.encryption = Some(match value {
            "none" => Encryption::None,
            "AES256" => Encryption::S3Managed,
            "aws:kms" => Encryption::Kms(kms_key),
            "aws:kms:dsse" => Encryption::DualKms(kms_key),
            "sse-c" => Encryption::Customer(customer_key),
            _ => {
                return Err(Error::invalid(format!(
                    "option {key} wants none, AES256, aws:kms, aws:kms:dsse or sse-c, got {value:?}"
                )));
            }
        });
        Ok(())
    }

    /// `s3.sse.kms-key-id` (`kms`) / `s3.sse.customer-key`, in either order with `s3.sse`.
    fn set_encryption_key(&mut self, key: &str, value: &str) -> Result<()> {
        let kms = key == "s3.sse.kms-key-id";
        let id = Some(value.to_string());
        self.encryption = Some(match (kms, self.encryption.take()) {
            (true, Some(Encryption::DualKms(_))) => Encryption::DualKms(id),
            (true, None | Some(Encryption::Kms(_))) => Encryption::Kms(id),
            (false, None | Some(Encryption::Customer(_))) => Encryption::Customer(value.into()),
            (_, Some(other)) => {
                let message =
                    format!("option {key} does not go with s3.sse {:?}", other.header_value());
                self.encryption = Some(other);
                return Err(Error::invalid(message));
            }
        });
        Ok(())
    }

    /// The endpoint as a URL with a scheme, if one is set.
    fn endpoint_url(&self) -> Option<String> {
        let endpoint = self.endpoint.as_deref()?.trim_end_matches('/');
        Some(if endpoint.contains("://") {
            endpoint.to_string()
        } else {
            format!("https://{endpoint}")
        })
    }

    /// An id for the objects these settings reach in `bucket`: storages with equal ids can copy
    /// between each other server-side.
    pub fn store_id(&self, bucket: &str) -> String {
        format!("s3://{bucket}@{}", self.endpoint_url().as_deref().unwrap_or("aws"))
    }

    /// The client for `bucket`: these settings over the AWS environment.
    pub fn build(&self, bucket: &str) -> Result<AmazonS3> {
        let bad = |why: String| Error::invalid(format!("s3://{bucket}: {why}"));
        let mut builder = AmazonS3Builder::from_env()
            .with_bucket_name(bucket)
            // Put-if-absent (If-None-Match: *) backs WriteMode::CreateNew.
            .with_conditional_put(S3ConditionalPut::ETagMatch);
        if let Some(path_style) = self.path_style {
            builder = builder.with_virtual_hosted_style_request(!path_style);
        }
        if let Some(endpoint) = self.endpoint_url() {
            let (scheme, _) = endpoint.split_once("://").unwrap_or_default();
            if !matches!(scheme, "http" | "https") {
                return Err(bad(format!("endpoint {endpoint:?} is neither http:// nor https://")));
            }
            let url = if self.path_style == Some(false) {
                if host_is_ip_address(&endpoint) {
                    // object_store panics signing for a host like "bucket.127.0.0.1".
                    return Err(bad(format!(
                        "endpoint {endpoint:?} is an IP address, so the bucket cannot go in the \
                         host name: set path style (s3.path.style.access: true)"
                    )));
                }
                bucket_endpoint(&endpoint, bucket)
            } else {
                endpoint.clone()
            };
            builder = builder.with_endpoint(url).with_allow_http(scheme == "http");
        }
        if let Some(region) = &self.region {
            builder = builder.with_region(region);
        }
        if let Some(key) = &self.access_key_id {
            builder = builder.with_access_key_id(key);
        }
        if let Some(secret) = &self.secret_access_key {
            builder = builder.with_secret_access_key(secret);
        }
        if let Some(token) = &self.session_token {
            builder = builder.with_token(token);
        }
        if let Some(anonymous) = self.anonymous {
            builder = builder.with_skip_signature(anonymous);
        }
        if let Some(encryption) = &self.encryption {
            builder = encryption.apply(builder);
        }
        for (key, timeout) in [
            (ClientConfigKey::ConnectTimeout, self.connect_timeout),
            (ClientConfigKey::ReadTimeout, self.read_timeout),
            (ClientConfigKey::Timeout, self.request_timeout),
            (ClientConfigKey::PoolIdleTimeout, self.pool_idle_timeout),
        ] {
            if let Some(timeout) = timeout {
                let text = format!("{}ms", timeout.as_millis());
                builder = builder.with_config(AmazonS3ConfigKey::Client(key), text);
            }
        }
        if let Some(max_retries) = self.max_retries {
            builder = builder.with_retry(RetryConfig { max_retries, ..RetryConfig::default() });
        }
        builder.build().map_err(|e| bad(e.to_string()))
    }
}

impl Encryption {
    /// The `x-amz-server-side-encryption` value (object_store's name); `none` for no header.
    fn header_value(&self) -> &'static str {
        match self {
            Encryption::None => "none",
            Encryption::S3Managed => "AES256",
            Encryption::Kms(_) => "aws:kms",
            Encryption::DualKms(_) => "aws:kms:dsse",
            Encryption::Customer(_) => "sse-c",
        }
    }

    fn apply(&self, builder: AmazonS3Builder) -> AmazonS3Builder {
        // object_store exports the encryption keys only by their configuration names.
        let set = |builder: AmazonS3Builder, name: &str, value: &str| {
            let key: AmazonS3ConfigKey = name.parse().expect("object_store's own key name");
            builder.with_config(key, value)
        };
        let (kms_key, customer_key) = match self {
            // Explicitly none: no header, whatever the environment says.
            Encryption::None => return builder,
            Encryption::S3Managed => (None, None),
            Encryption::Kms(id) | Encryption::DualKms(id) => (id.as_deref(), None),
            Encryption::Customer(key) => (None, Some(key.as_str())),
        };
        let mut builder = set(builder, "aws_server_side_encryption", self.header_value());
        if let Some(id) = kms_key {
            builder = set(builder, "aws_sse_kms_key_id", id);
        }
        if let Some(key) = customer_key {
            builder = set(builder, "aws_sse_customer_key_base64", key);
        }
        builder
    }
}

fn parse_number(key: &str, value: &str, min: u64, max: u64) -> Result<u64> {
    match value.parse::<u64>() {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(Error::invalid(format!(
            "option {key} wants a whole number from {min} to {max}, got {value:?}"
        ))),
    }
}

/// `scheme://bucket.host[:port]` for virtual-hosted requests: object_store takes a custom
/// endpoint as the bucket's own, S3A and Flink's plugins put the bucket in front of the host.
pub fn bucket_endpoint(endpoint: &str, bucket: &str) -> String {
    match endpoint.split_once("://") {
        Some((scheme, host)) => format!("{scheme}://{bucket}.{host}"),
        None => format!("https://{bucket}.{endpoint}"),
    }
}

/// Whether the host of `endpoint` (`scheme://host[:port][/path]`) is an IPv4 or IPv6 address.
fn host_is_ip_address(endpoint: &str) -> bool {
    let authority = endpoint.split_once("://").map_or(endpoint, |(_, rest)| rest);
    let authority = authority.split('/').next().unwrap_or_default();
    if authority.starts_with('[') {
        return true;
    }
    let host = authority.rsplit_once(':').map_or(authority, |(host, _)| host);
    host.parse::<std::net::Ipv4Addr>().is_ok()
}

// Hand-written so that the secret never lands in a log line.
impl fmt::Debug for S3Options {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("S3Options")
            .field("endpoint", &self.endpoint)
            .field("region", &self.region)
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &self.secret_access_key.as_ref().map(|_| "<redacted>"))
            .field("path_style", &self.path_style)
            .field("session_token", &self.session_token.as_ref().map(|_| "<redacted>"))
            .field("anonymous", &self.anonymous)
            .field("encryption", &self.encryption)
            .field("connect_timeout", &self.connect_timeout)
            .field("read_timeout", &self.read_timeout)
            .field("request_timeout", &self.request_timeout)
            .field("pool_idle_timeout", &self.pool_idle_timeout)
            .field("max_retries", &self.max_retries)
            .field("part_size", &self.part_size)
            .field("parts_in_flight", &self.parts_in_flight)
            .finish()
    }
}

// Hand-written so that an SSE-C key never lands in a log line.
impl fmt::Debug for Encryption {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Encryption::Kms(id) | Encryption::DualKms(id) => {
                write!(f, "{}({id:?})", self.header_value())
            }
            Encryption::Customer(_) => write!(f, "sse-c(<redacted>)"),
            _ => f.write_str(self.header_value()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_map_to_settings_and_others_are_not_taken() {
        let mut options = S3Options::default();
        for (key, value) in [
            ("s3.endpoint", "http://127.0.0.1:9000"),
            ("s3.region", "eu-west-1"),
            ("s3.access-key", "AKIA"),
            ("s3.secret-key", "hunter2"),
            ("s3.path-style", "false"),
        ] {
            assert!(options.set(key, value).unwrap(), "{key}");
        }
        assert_eq!(options.endpoint.as_deref(), Some("http://127.0.0.1:9000"));
        assert_eq!(options.region.as_deref(), Some("eu-west-1"));
        assert_eq!(options.access_key_id.as_deref(), Some("AKIA"));
        assert_eq!(options.secret_access_key.as_deref(), Some("hunter2"));
        assert_eq!(options.path_style, Some(false));
        assert!(!options.set("s3.nope", "1").unwrap());
        assert!(
            options.set("s3.path-style", "maybe").unwrap_err().to_string().contains("path-style")
        );
        let debug = format!("{options:?}");
        assert!(!debug.contains("hunter2") && debug.contains("AKIA"), "{debug}");
    }

    #[test]
    fn client_keys_map_to_settings_and_bad_values_are_refused_naming_the_key() {
        let options = S3Options::default();
        let mut set = options.clone();
        for (key, value) in [
            ("s3.session-token", "session-secret"),
            ("s3.anonymous", "true"),
            ("s3.connect-timeout-ms", "1500"),
            ("s3.read-timeout-ms", "2000"),
            ("s3.request-timeout-ms", "30000"),
            ("s3.pool-idle-timeout-ms", "60000"),
            ("s3.max-retries", "0"),
            ("s3.multipart.part-size", "5242880"),
            ("s3.multipart.parts-in-flight", "4"),
        ] {
            assert!(set.set(key, value).unwrap(), "{key}");
        }
        assert_eq!(set.session_token.as_deref(), Some("session-secret"));
        assert_eq!(set.anonymous, Some(true));
        assert_eq!(set.connect_timeout, Some(Duration::from_millis(1500)));
        assert_eq!(set.read_timeout, Some(Duration::from_secs(2)));
        assert_eq!(set.request_timeout, Some(Duration::from_secs(30)));
        assert_eq!(set.pool_idle_timeout, Some(Duration::from_secs(60)));
        assert_eq!(
            (set.max_retries, set.part_size, set.parts_in_flight),
            (Some(0), Some(5 << 20), Some(4))
        );
        assert!(!format!("{set:?}").contains("session-secret"));
        for (key, value) in [
            ("s3.anonymous", "perhaps"),
            ("s3.connect-timeout-ms", "1s"),
            ("s3.read-timeout-ms", "0"),
            ("s3.max-retries", "-1"),
            ("s3.multipart.part-size", "5242879"),
            ("s3.multipart.part-size", "5368709121"),
            ("s3.multipart.parts-in-flight", "0"),
            ("s3.sse", "rot13"),
        ] {
            let message = options.clone().set(key, value).unwrap_err().to_string();
            assert!(message.contains(key) && message.contains(value), "{message}");
        }
    }

    #[test]
    fn encryption_keys_combine_in_either_order_and_the_customer_key_never_shows() {
        let of = |pairs: &[(&str, &str)]| {
            let mut options = S3Options::default();
            for (key, value) in pairs {
                options.set(key, value).unwrap();
            }
            options.encryption
        };
        let kms = Some(Encryption::Kms(Some("alias/k".into())));
        assert_eq!(of(&[("s3.sse", "aws:kms"), ("s3.sse.kms-key-id", "alias/k")]), kms);
        assert_eq!(of(&[("s3.sse.kms-key-id", "alias/k"), ("s3.sse", "aws:kms")]), kms);
        assert_eq!(
            of(&[("s3.sse.kms-key-id", "alias/k"), ("s3.sse", "aws:kms:dsse")]),
            Some(Encryption::DualKms(Some("alias/k".into())))
        );
        assert_eq!(of(&[("s3.sse", "AES256")]), Some(Encryption::S3Managed));
        assert_eq!(of(&[("s3.sse", "none")]), Some(Encryption::None));
        let customer = of(&[("s3.sse.customer-key", "c2VjcmV0"), ("s3.sse", "sse-c")]);
        assert_eq!(customer, Some(Encryption::Customer("c2VjcmV0".into())));
        assert!(!format!("{customer:?}").contains("c2VjcmV0"));
        let mut mixed = S3Options::default();
        mixed.set("s3.sse", "sse-c").unwrap();
        let message = mixed.set("s3.sse.kms-key-id", "alias/k").unwrap_err().to_string();
        assert!(message.contains("s3.sse.kms-key-id") && message.contains("sse-c"), "{message}");
        for sse in ["AES256", "aws:kms", "aws:kms:dsse"] {
            let mut options =
                S3Options { endpoint: Some("http://127.0.0.1:9".into()), ..S3Options::default() };
            options.set("s3.sse", sse).unwrap();
            assert!(options.build("b").is_ok(), "{sse}");
        }
    }

    #[test]
    fn virtual_hosted_endpoints_put_the_bucket_in_front_of_the_host() {
        assert_eq!(bucket_endpoint("http://minio:9000", "b"), "http://b.minio:9000");
        assert_eq!(bucket_endpoint("s3.example.com", "b"), "https://b.s3.example.com");
        let bare = S3Options { endpoint: Some("minio:9000/".into()), ..S3Options::default() };
        assert_eq!(bare.endpoint_url().as_deref(), Some("https://minio:9000"));
        assert_eq!(bare.store_id("b"), "s3://b@https://minio:9000");
    }

    #[test]
    fn virtual_hosted_requests_to_an_ip_address_are_refused_naming_path_style() {
        for endpoint in ["http://127.0.0.1:9000", "https://[::1]:9000", "10.0.0.1"] {
            let options = S3Options {
                endpoint: Some(endpoint.into()),
                path_style: Some(false),
                ..S3Options::default()
            };
            let message = options.build("b").unwrap_err().to_string();
            assert!(message.contains("path.style"), "{message}");
            let path_style = S3Options { path_style: Some(true), ..options };
            assert!(path_style.build("b").is_ok(), "{endpoint}");
        }
        let named = S3Options {
            endpoint: Some("http://minio.internal:9000".into()),
            path_style: Some(false),
            ..S3Options::default()
        };
        assert!(named.build("b").is_ok());
    }

    #[test]
    fn an_endpoint_of_another_scheme_is_refused_naming_the_bucket() {
        let ftp = S3Options { endpoint: Some("ftp://host".into()), ..S3Options::default() };
        let message = ftp.build("b").unwrap_err().to_string();
        assert!(message.contains("s3://b") && message.contains("ftp://host"), "{message}");
    }

    #[test]
    fn configured_keys_are_the_credentials_the_client_signs_with() {
        let options = S3Options {
            endpoint: Some("http://127.0.0.1:9".into()),
            access_key_id: Some("flink-key".into()),
            secret_access_key: Some("flink-secret".into()),
            ..S3Options::default()
        };
        let store = options.build("b").unwrap();
        let credential = crate::storage::block_on(store.credentials().get_credential()).unwrap();
        assert_eq!(credential.key_id, "flink-key");
        assert_eq!(credential.secret_key, "flink-secret");
    }

    /// The environment is per process, so the check runs in a child test process with `AWS_*`
    /// set (see [`environment_fallback_in_child`]); its output must show that it ran and passed.
    #[test]
    fn unset_keys_fall_back_to_the_aws_environment() {
        let child = "storage::s3::tests::environment_fallback_in_child";
        let output = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", child, "--include-ignored", "--test-threads", "1"])
            .env("AWS_ACCESS_KEY_ID", "env-key")
            .env("AWS_SECRET_ACCESS_KEY", "env-secret")
            .env_remove("AWS_SESSION_TOKEN")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success() && stdout.contains("1 passed"),
            "{stdout}{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }

    #[test]
    #[ignore = "run in a child process by unset_keys_fall_back_to_the_aws_environment"]
    fn environment_fallback_in_child() {
        let credential_of = |options: S3Options| {
            let store = options.build("b").unwrap();
            crate::storage::block_on(store.credentials().get_credential()).unwrap()
        };
        let endpoint = Some("http://127.0.0.1:9".to_string());
        let from_env =
            credential_of(S3Options { endpoint: endpoint.clone(), ..S3Options::default() });
        assert_eq!(
            (from_env.key_id.as_str(), from_env.secret_key.as_str()),
            ("env-key", "env-secret")
        );
        let configured = credential_of(S3Options {
            endpoint,
            access_key_id: Some("flink-key".into()),
            secret_access_key: Some("flink-secret".into()),
            ..S3Options::default()
        });
        assert_eq!(configured.key_id, "flink-key");
    }
}
