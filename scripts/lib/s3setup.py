"""Prepares a freshly started local S3 server for the tests (run with the celld-edge venv's python).

  s3setup.py plain  ENDPOINT BUCKET   create the bucket (ministack: any credentials work)
  s3setup.py strict ENDPOINT BUCKET   moto: create an IAM user with s3:* and an access key, the bucket with
                                      a CORS rule for browser tests, then switch signature checking on;
                                      prints "KEY_ID SECRET" of the new key
  s3setup.py signed ENDPOINT BUCKET [VERSIONED_BUCKET]
                                      a server with its own credentials (versitygw; CELLD_SETUP_KEY_ID and
                                      CELLD_SETUP_SECRET in the environment): create the bucket with a
                                      signed PUT, and the second one with versioning on

Only ever talks to the endpoint it is given (a loopback server the test scripts started).
"""

import json
import os
import sys
import urllib.request

import botocore.session
from botocore.config import Config

# Any credentials pass before moto's auth mode is on; ministack never checks.
BOOT_KEY_ID, BOOT_SECRET = "celld-boot", "celld-boot-secret"


def client(service, endpoint, key_id=BOOT_KEY_ID, secret=BOOT_SECRET):
    return botocore.session.get_session().create_client(
        service,
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id=key_id,
        aws_secret_access_key=secret,
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}),
    )


def plain(endpoint, bucket):
    client("s3", endpoint).create_bucket(Bucket=bucket)


def strict(endpoint, bucket):
    iam = client("iam", endpoint)
    iam.create_user(UserName="celld-test")
    iam.put_user_policy(
        UserName="celld-test",
        PolicyName="s3-all",
        PolicyDocument=json.dumps(
            {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}
        ),
    )
    key = iam.create_access_key(UserName="celld-test")["AccessKey"]
    s3 = client("s3", endpoint)
    s3.create_bucket(Bucket=bucket)
    # Browser tests fetch cross-origin from the test page: answer preflights and expose the ETag.
    s3.put_bucket_cors(
        Bucket=bucket,
        CORSConfiguration={
            "CORSRules": [
                {
                    "AllowedOrigins": ["*"],
                    "AllowedMethods": ["GET", "PUT", "DELETE", "HEAD", "POST"],
                    "AllowedHeaders": ["*"],
                    "ExposeHeaders": ["etag"],
                    "MaxAgeSeconds": 600,
                }
            ]
        },
    )
    req = urllib.request.Request(endpoint + "/moto-api/reset-auth", data=b"0", method="POST", headers={"Content-Type": "text/plain"})
    urllib.request.urlopen(req).read()
    print(key["AccessKeyId"], key["SecretAccessKey"])


def signed(endpoint, bucket, versioned=None):
    s3 = client("s3", endpoint, os.environ["CELLD_SETUP_KEY_ID"], os.environ["CELLD_SETUP_SECRET"])
    s3.create_bucket(Bucket=bucket)
    if versioned:
        s3.create_bucket(Bucket=versioned)
        s3.put_bucket_versioning(Bucket=versioned, VersioningConfiguration={"Status": "Enabled"})


if __name__ == "__main__":
    mode, endpoint, *buckets = sys.argv[1:]
    {"plain": plain, "strict": strict, "signed": signed}[mode](endpoint, *buckets)
