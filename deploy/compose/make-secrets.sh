#!/usr/bin/env bash
# Writes the files deploy/compose.yaml hands its services as secrets, once
# (existing files are kept). For local use only.
#   slaproof-secrets.toml  a configuration fragment (SLAPROOF_CONFIG): the
#                          webhook sealing key and the API's token keys
#   metrics-token          the bearer token of every service's Prometheus
#                          listener (telemetry.metrics_token_file)
#   chain-key              the attester's private key: anvil's first
#                          well-known development account (never on a real
#                          chain)
set -euo pipefail
cd "$(dirname "$0")/secrets"
umask 077
if [ ! -f slaproof-secrets.toml ]; then
  cat > slaproof-secrets.toml <<TOML
# Secrets of the api and webhooks services (compose secret, read through
# SLAPROOF_CONFIG; environment variables still win over it).
[webhooks]
# AES-256-GCM key webhook endpoint secrets are sealed under.
secret_key = "$(head -c 32 /dev/urandom | base64)"

[api]
# Shared by every api replica: embed tokens are signed with it.
embed_secret = "$(head -c 48 /dev/urandom | base64 | tr -d '\n')"

# The token issuer's key(s); here an HS256 secret to mint local test tokens
# with (iss "slaproof", aud "slaproof-api"). Use your identity provider's
# public keys or api.jwks_url anywhere else.
[[api.keys]]
id = "local"
algorithm = "HS256"
secret = "$(head -c 48 /dev/urandom | base64 | tr -d '\n')"
TOML
  echo "wrote $(pwd)/slaproof-secrets.toml"
fi
if [ ! -f chain-key ]; then
  # anvil's account 0 (public test mnemonic "test test ... junk").
  printf '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80\n' > chain-key
  echo "wrote $(pwd)/chain-key (anvil's development key)"
fi
if [ ! -f metrics-token ]; then
  head -c 32 /dev/urandom | base64 | tr -d '\n/+=' > metrics-token
  echo "wrote $(pwd)/metrics-token (Prometheus sends it as a bearer token)"
fi
# The containers run as uid 65532 and must read the files.
chmod 0644 slaproof-secrets.toml chain-key metrics-token
