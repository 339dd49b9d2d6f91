#!/usr/bin/env bash
# Prints the paths of Spark's s3a connector jars, comma-separated (for spark.jars or a class path):
#   scripts/s3a-jars.sh
# The s3a connector is not inside pyspark. The only source of it from this project's registries is the sdist of
# sagemaker_pyspark 1.4.5, which carries hadoop-aws 3.3.1 and the AWS SDK bundle it was built against: the sdist is
# downloaded once with pip (not installed), the two jars are taken out of it, checked against their SHA-256, and
# kept in the cache folder ($SARGABLE_S3A_JARS, default ~/.cache/sargable/s3a-jars); later runs reuse them.
# PYTHON names the interpreter whose pip downloads (default: the project's .venv, else python3).
set -euo pipefail

cache=${SARGABLE_S3A_JARS:-${XDG_CACHE_HOME:-$HOME/.cache}/sargable/s3a-jars}
declare -A sha256=(
    [hadoop-aws-3.3.1.jar]=6be50ad8a8b445d2802381b085b2a3ede5c29d353450a6a21f16b2fefa962b6e
    [aws-java-sdk-bundle-1.11.901.jar]=b87175b32a16544cc1b37cf40390eb375833e62bed67f8ce6cde4b7ad6429ead
)
jars=(hadoop-aws-3.3.1.jar aws-java-sdk-bundle-1.11.901.jar)

missing=0
for jar in "${jars[@]}"; do [[ -f "$cache/$jar" ]] || missing=1; done
if [[ $missing -eq 1 ]]; then
    here=$(cd "$(dirname "$0")/.." && pwd)
    python=${PYTHON:-}
    if [[ -z "$python" ]]; then
        if [[ -x "$here/.venv/bin/python" ]]; then python="$here/.venv/bin/python"; else python=python3; fi
    fi
    mkdir -p "$cache"
    work=$(mktemp -d "$cache/.download.XXXXXX")
    trap 'rm -rf "$work"' EXIT
    echo "s3a-jars.sh: fetching the s3a jars (sagemaker_pyspark 1.4.5 sdist, 181 MB) into $cache" >&2
    "$python" -m pip download -q --no-deps --no-binary :all: sagemaker_pyspark==1.4.5 -d "$work" >&2
    tar -xzf "$work"/sagemaker_pyspark-1.4.5.tar.gz -C "$work" \
        --wildcards "${jars[@]/#/*/deps/jars/}"
    for jar in "${jars[@]}"; do
        found=$(find "$work" -name "$jar" -print -quit)
        [[ -n "$found" ]] || { echo "s3a-jars.sh: $jar is not in the sdist" >&2; exit 1; }
        echo "${sha256[$jar]}  $found" | sha256sum --quiet -c - >&2 \
            || { echo "s3a-jars.sh: $jar does not have the expected SHA-256" >&2; exit 1; }
        mv "$found" "$cache/$jar"
    done
fi
paths=()
for jar in "${jars[@]}"; do paths+=("$cache/$jar"); done
(IFS=,; echo "${paths[*]}")
