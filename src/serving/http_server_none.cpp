// The build found no cpp-httplib: the metrics can still be rendered, but not served.
#include "serving/http_server.h"

namespace vxperf::serving {

std::unique_ptr<HttpServer> start_http_server(const std::string& /*ipv4*/, int /*port*/,
                                              const std::function<std::string()>& /*render*/,
                                              std::string* error) {
  if (error != nullptr) {
    *error = "this build has no HTTP server (cpp-httplib was not found when it was configured)";
  }
  return nullptr;
}

bool http_server_available() { return false; }

}  // namespace vxperf::serving
