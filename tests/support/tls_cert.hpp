// A self-signed TLS certificate made at test time with the openssl command line,
// for https servers on loopback (HttpServerOptions::tls_cert/tls_key).
#pragma once

#include <filesystem>
#include <string>

namespace tests::support {

struct TlsCertificate {
  std::filesystem::path cert;  // PEM certificate (also the "CA" that trusts it)
  std::filesystem::path key;   // PEM private key
};

// Writes DIR/NAME.crt and DIR/NAME.key: an EC P-256 key and a certificate valid
// for one day, subject CN=`ip`, subjectAltName IP:`ip`. Throws
// std::runtime_error with openssl's output if openssl is missing or fails.
TlsCertificate make_self_signed_certificate(const std::filesystem::path& dir,
                                            const std::string& name,
                                            const std::string& ip = "127.0.0.1");

}  // namespace tests::support
