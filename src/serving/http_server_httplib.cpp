// GET /metrics on cpp-httplib (Debian's libcpp-httplib: a compiled library, its header built with
// the same CPPHTTPLIB_* feature macros, which pkg-config supplies).
#include <httplib.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <exception>
#include <system_error>
#include <thread>
#include <utility>

#include "serving/http_server.h"
#include "vxperf/prometheus_sink.h"

namespace vxperf::serving {
namespace {

// Limits: a scrape is one small GET, so anything large or slow is refused early. Header and
// request-target lengths are the library's own (8 KiB, fixed when Debian built it).
constexpr std::size_t kMaxBody = 4096;
constexpr time_t kTimeoutS = 5;           // per read or write on a connection
constexpr time_t kFirstRequestWaitS = 2;  // a connection that sends nothing is closed
constexpr std::size_t kWorkers = 2;       // connections served at once; more wait in the queue

class HttplibServer final : public HttpServer {
 public:
  explicit HttplibServer(const std::function<std::string()>& render) : render_(render) {}

  ~HttplibServer() override {
    server_.stop();
    if (thread_.joinable()) thread_.join();
  }

  int port() const override { return port_; }

  bool start(const std::string& ipv4, int port, std::string* error) {
    configure();
    errno = 0;
    port_ =
        port == 0 ? server_.bind_to_any_port(ipv4) : (server_.bind_to_port(ipv4, port) ? port : -1);
    if (port_ < 0) {
      int err = errno;
      *error = err != 0 ? std::strerror(err) : "cannot listen there";
      return false;
    }
    // A scraper that hangs up mid-response can make send() raise SIGPIPE, whose default action
    // ends the process: cpp-httplib 0.11 checks the peer before each send but does not pass
    // MSG_NOSIGNAL, so a reset landing in between kills the program. Rather than change the
    // program's disposition, the server's threads start with SIGPIPE blocked (the workers inherit
    // the listening thread's mask), so their send() just fails with EPIPE.
    sigset_t pipe;
    sigset_t saved;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, &saved);
    try {
      thread_ = std::thread([this] {
        try {
          server_.listen_after_bind();
        } catch (...) {  // out of memory: the endpoint stops, the program goes on
        }
        finished_.store(true);
      });
    } catch (const std::system_error& e) {
      pthread_sigmask(SIG_SETMASK, &saved, nullptr);
      *error = std::string("cannot start its thread: ") + e.what();
      return false;
    }
    pthread_sigmask(SIG_SETMASK, &saved, nullptr);
    // stop() only takes effect once the loop runs, so wait for it before anyone may destroy us.
    while (!server_.is_running() && !finished_.load()) std::this_thread::yield();
    if (!server_.is_running()) {
      *error = "the server stopped as it started";
      return false;
    }
    return true;
  }

 private:
  void configure() {
    server_.set_address_family(AF_INET);
    // The library's default is SO_REUSEPORT, which lets a second listener share a port already in
    // use and split its connections; SO_REUSEADDR still allows a quick restart but says "in use".
    server_.set_socket_options([](socket_t sock) {
      int yes = 1;
      setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    });
    server_.new_task_queue = [] { return new httplib::ThreadPool(kWorkers); };
    server_.set_keep_alive_max_count(1);
    server_.set_keep_alive_timeout(kFirstRequestWaitS);
    server_.set_read_timeout(kTimeoutS, 0);
    server_.set_write_timeout(kTimeoutS, 0);
    server_.set_payload_max_length(kMaxBody);

    // Handlers for the other methods make 405 answers; httplib reads (and bounds) a body before
    // dispatching, so the connection is left clean. Paths other than /metrics fall through: 404.
    server_.Get("/metrics", [this](const httplib::Request& req, httplib::Response& res) {
      if (req.method != "GET") {  // HEAD arrives here too
        not_allowed(res);
        return;
      }
      res.set_content(render_(), kPrometheusContentType);
    });
    auto not_allowed_handler = [](const httplib::Request&, httplib::Response& res) {
      not_allowed(res);
    };
    server_.Post("/metrics", not_allowed_handler);
    server_.Put("/metrics", not_allowed_handler);
    server_.Patch("/metrics", not_allowed_handler);
    server_.Delete("/metrics", not_allowed_handler);
    server_.Options("/metrics", not_allowed_handler);
    server_.set_exception_handler(
        [](const httplib::Request&, httplib::Response& res, const std::exception_ptr&) {
          res.status = 500;
          res.set_content("vxperf: cannot render the metrics\n", "text/plain");
        });
  }

  static void not_allowed(httplib::Response& res) {
    res.status = 405;
    res.set_header("Allow", "GET");
    res.set_content("only GET /metrics is served\n", "text/plain");
  }

  std::function<std::string()> render_;
  httplib::Server server_;
  std::thread thread_;
  std::atomic<bool> finished_{false};
  int port_ = -1;
};

}  // namespace

std::unique_ptr<HttpServer> start_http_server(const std::string& ipv4, int port,
                                              const std::function<std::string()>& render,
                                              std::string* error) {
  auto server = std::make_unique<HttplibServer>(render);
  if (!server->start(ipv4, port, error)) return nullptr;
  return server;
}

bool http_server_available() { return true; }

}  // namespace vxperf::serving
