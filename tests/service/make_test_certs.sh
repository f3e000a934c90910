#!/bin/sh
# Writes a throwaway CA (ca.pem), a server certificate for localhost and
# 127.0.0.1 (server.pem, server.key) and a client certificate (client.pem,
# client.key), all signed by the CA, into the folder $1. Used by
# security_test at test time; needs the openssl CLI.
set -eu
cd "$1"
days=2
openssl req -x509 -newkey rsa:2048 -nodes -days $days -subj "/CN=favor-test-ca" \
  -keyout ca.key -out ca.pem 2>/dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' > server.ext
printf 'extendedKeyUsage=clientAuth\n' > client.ext
for who in server client; do
  openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" \
    -keyout $who.key -out $who.csr 2>/dev/null
  openssl x509 -req -in $who.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
    -days $days -extfile $who.ext -out $who.pem 2>/dev/null
done
