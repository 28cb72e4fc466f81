// libcurl, the HTTP client's transport (Debian libcurl4-openssl-dev: OpenSSL underneath).
#include <curl/curl.h>
