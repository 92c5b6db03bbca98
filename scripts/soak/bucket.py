#!/usr/bin/env python3
"""The soak's bucket on the S3 test server (moto, no signature checks), through boto3.

  bucket.py <endpoint> <bucket> list [prefix]          one "key size" line per object
  bucket.py <endpoint> <bucket> get <key> <file>
  bucket.py <endpoint> <bucket> delete-prefix <prefix>
"""
import sys

import boto3
from botocore.config import Config


def client(endpoint):
    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id="soak",
        aws_secret_access_key="soak",
        region_name="us-east-1",
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 3}),
    )


def objects(s3, bucket, prefix=""):
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for o in page.get("Contents", []):
            yield o["Key"], o["Size"]


def main():
    endpoint, bucket, command, *rest = sys.argv[1:]
    s3 = client(endpoint)
    if command == "list":
        for key, size in objects(s3, bucket, rest[0] if rest else ""):
            print(key, size)
    elif command == "get":
        s3.download_file(bucket, rest[0], rest[1])
    elif command == "delete-prefix":
        keys = [k for k, _ in objects(s3, bucket, rest[0])]
        for start in range(0, len(keys), 1000):
            s3.delete_objects(
                Bucket=bucket,
                Delete={"Objects": [{"Key": k} for k in keys[start : start + 1000]]},
            )
        print(len(keys))
    else:
        sys.exit(f"unknown command {command}")


if __name__ == "__main__":
    main()
