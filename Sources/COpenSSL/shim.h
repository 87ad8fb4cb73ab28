#ifndef BUZZKIT_COPENSSL_SHIM_H
#define BUZZKIT_COPENSSL_SHIM_H
// libcrypto only: hashes, HMAC, constant-time comparison and the CSPRNG. No TLS here.
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/crypto.h>
#endif
