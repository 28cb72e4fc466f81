// microhttpd.h expects the platform's socket and integer types to be declared first.
#include <stdarg.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <microhttpd.h>
