#ifndef BUZZKIT_COPENSSLTLS_SHIM_H
#define BUZZKIT_COPENSSLTLS_SHIM_H
// libssl for the webhook client's https:// deliveries. Kept apart from COpenSSL so only the
// modules that speak TLS link libssl.
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

// SSL_set_tlsext_host_name is a macro over SSL_ctrl, which Swift cannot import.
static inline int buzzkit_SSL_set_tlsext_host_name(SSL *ssl, const char *name) {
    return (int)SSL_set_tlsext_host_name(ssl, name);
}

// SSL_CTX_set_min_proto_version is a macro over SSL_CTX_ctrl.
static inline int buzzkit_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_min_proto_version(ctx, version);
}
#endif
