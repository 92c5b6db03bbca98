//! S3 connection settings and the store built from them. The Java side maps Flink's `s3.*` keys
//! (`s3.endpoint`, `s3.access-key`, ...) onto the storage keys of [`S3Options::set`]; what is not
//! set falls back to the `AWS_*` environment and then to instance or container credentials, as
//! object_store's `AmazonS3Builder::from_env` resolves them.

use std::fmt;

use object_store::aws::{AmazonS3, AmazonS3Builder, S3ConditionalPut};

use crate::{Error, Result};

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
}

impl S3Options {
    /// Sets one setting from its storage key: `s3.endpoint`, `s3.region`, `s3.access-key`,
    /// `s3.secret-key`, `s3.path-style` (true or false). Returns false for other keys.
    pub fn set(&mut self, key: &str, value: &str) -> Result<bool> {
        let text = || Some(value.to_string());
        match key {
            "s3.endpoint" => self.endpoint = text(),
            "s3.region" => self.region = text(),
            "s3.access-key" => self.access_key_id = text(),
            "s3.secret-key" => self.secret_access_key = text(),
            "s3.path-style" => self.path_style = Some(super::open::parse_bool(key, value)?),
            _ => return Ok(false),
        }
        Ok(true)
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
        builder.build().map_err(|e| bad(e.to_string()))
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
            .finish()
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
