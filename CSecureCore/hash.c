/* hash.c — BLAKE2b-256 over public data (file checksums, identifiers). */
#include "internal.h"

#include <sodium.h>

spc_status spc_digest(const uint8_t *data, size_t len, uint8_t out[SPC_DIGEST_BYTES]) {
    if (!spc__ready()) return SPC_E_INIT;
    return crypto_generichash(out, SPC_DIGEST_BYTES, data, len, NULL, 0) == 0 ? SPC_OK : SPC_E_ARGUMENT;
}
