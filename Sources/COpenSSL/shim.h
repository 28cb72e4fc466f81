/* OpenSSL libcrypto, for the AES-128 and P-256 primitives of CProtocolCrypto's
 * protocol.c. Only the EVP interface is used (OpenSSL 3). */
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>
