#!/usr/bin/env python3
"""bench/s3_boto3.py — the boto3 client of bench/s3.sh: moves one file to or from the bucket with
boto3's managed transfer (upload_file / download_file), 5 MiB parts, 5 in flight, threads.

    python bench/s3_boto3.py upload|download FILE KEY

Reads the local stack's settings from the environment (source .stack/env first):
GATEWAY_S3_ENDPOINT, GATEWAY_S3_BUCKET, GATEWAY_S3_REGION, GATEWAY_S3_ACCESS_KEY_ID,
GATEWAY_S3_SECRET_ACCESS_KEY. Everything else is botocore's default (so, like the AWS CLI, it
adds a CRC32 checksum to every uploaded part). Prints one line: `seconds bytes MB/s`, timed
around the transfer call only (interpreter start-up and imports are not in it; bench/s3.sh
times the whole process).
"""
import os
import sys
import time

import boto3
from boto3.s3.transfer import TransferConfig
from botocore.config import Config

MIB = 1024 * 1024


def main() -> int:
    if len(sys.argv) != 4 or sys.argv[1] not in ("upload", "download"):
        print(__doc__.strip().split("\n\n")[1].strip(), file=sys.stderr)
        return 64
    direction, path, key = sys.argv[1:4]
    env = os.environ
    try:
        endpoint, bucket = env["GATEWAY_S3_ENDPOINT"], env["GATEWAY_S3_BUCKET"]
    except KeyError as missing:
        print(f"s3_boto3.py: {missing.args[0]} is not set (source .stack/env)", file=sys.stderr)
        return 2
    client = boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name=env.get("GATEWAY_S3_REGION", "us-east-1"),
        aws_access_key_id=env.get("GATEWAY_S3_ACCESS_KEY_ID"),
        aws_secret_access_key=env.get("GATEWAY_S3_SECRET_ACCESS_KEY"),
        # 5 in flight need 5 pooled connections (the default pool is 10: no change, but explicit).
        config=Config(s3={"addressing_style": "path"}, max_pool_connections=10),
    )
    config = TransferConfig(
        multipart_threshold=5 * MIB,
        multipart_chunksize=5 * MIB,
        max_concurrency=5,
        use_threads=True,
    )
    started = time.monotonic()
    if direction == "upload":
        client.upload_file(path, bucket, key, Config=config)
    else:
        client.download_file(bucket, key, path, Config=config)
    seconds = time.monotonic() - started
    size = os.path.getsize(path)
    print(f"{seconds:.3f} {size} {size / seconds / 1e6:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
