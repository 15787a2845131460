"""Prints, as one JSON array, every endpoint botocore knows in the aws, aws-cn and aws-us-gov partitions:
[url, signing service, signing region, endpoint key]. Run by tests/node/aws-client.test.mjs, which checks
that AwsClient guesses the same service and region from each host (its README claims: regional, global,
S3 and its legacy/FIPS/dual-stack forms, IoT...).

The signing service is the endpoint's credentialScope service, else the service model's signingName for
that endpoint prefix; the region is the credentialScope region, else the endpoint's region key. Left out:
deprecated entries (botocore's pseudo-regions such as fips-us-east-1, whose keys are not regions), and
keys with neither a service model of their own nor a credentialScope service (variants of another key).
"""

import glob
import gzip
import json
import os
import sys

import botocore

data = os.path.join(os.path.dirname(botocore.__file__), "data")
signing = {}
for model_dir in glob.glob(os.path.join(data, "*", "")):
    versions = sorted(glob.glob(os.path.join(model_dir, "*", "service-2.json*")))
    if not versions:
        continue
    opener = gzip.open if versions[-1].endswith(".gz") else open
    with opener(versions[-1], "rt") as f:
        meta = json.load(f)["metadata"]
    signing.setdefault(meta.get("endpointPrefix"), set()).add(meta.get("signingName") or meta.get("endpointPrefix"))

with open(os.path.join(data, "endpoints.json")) as f:
    endpoints = json.load(f)
rows = []
for part in endpoints["partitions"]:
    if part["partition"] not in ("aws", "aws-cn", "aws-us-gov"):
        continue
    for key, service in part["services"].items():
        defaults = service.get("defaults", {})
        for region, ep in service["endpoints"].items():
            scope = {**defaults.get("credentialScope", {}), **ep.get("credentialScope", {})}
            if ep.get("deprecated") or (key not in signing and "service" not in scope):
                continue
            names = signing.get(key, {key})
            if "service" not in scope and len(names) != 1:
                continue  # one prefix, several models signing differently: the host cannot say which
            host = ep.get("hostname") or defaults.get("hostname") or part["defaults"]["hostname"]
            host = host.replace("{service}", key).replace("{region}", region).replace("{dnsSuffix}", part["dnsSuffix"])
            rows.append([f"https://{host}/", scope.get("service") or next(iter(names)), scope.get("region") or region, key])
json.dump(rows, sys.stdout)
