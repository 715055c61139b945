// corgy-serve: serves the models of a Triton-style model repository over the KServe v2 / Triton HTTP protocol, with
// dynamic batching (docs/serving.md).
//   corgy-serve --model-repository DIR [--http-port 8000] [--http-address 127.0.0.1]
#include <httplib.h>
#include <signal.h>
#include <sys/socket.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <thread>

#include "serve/http_routes.h"
#include "serve/metrics.h"
#include "serve/model_registry.h"
#include "serve/model_repository.h"

namespace {

volatile std::sig_atomic_t stop_signal = 0;

extern "C" void on_stop_signal(int signal) { stop_signal = signal; }

struct Options {
  std::string model_repository;
  std::string http_address = "127.0.0.1";
  int http_port = 8000;
  int http_threads = 32;
  std::size_t max_request_bytes = std::size_t{64} << 20;
  std::uint64_t max_tensor_elements = std::uint64_t{1} << 24;
  bool exit_on_error = true;
};

void define_options(CLI::App& app, Options& options) {
  app.description(
      "Serves the models of a model repository (<repo>/<model>/<version>/model.onnx, or model.cfg + model.weights) "
      "over the KServe v2 / Triton HTTP protocol, with dynamic batching (docs/serving.md).");
  app.add_option("--model-repository", options.model_repository, "the model repository folder")
      ->type_name("DIR")
      ->required()
      ->check(CLI::ExistingDirectory);
  app.add_option("--http-address", options.http_address, "address to listen on")
      ->type_name("ADDRESS")
      ->capture_default_str();
  app.add_option("--http-port", options.http_port,
                 "port to listen on; 0 picks a free one (printed as 'listening on ADDRESS:PORT')")
      ->type_name("N")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  app.add_option("--http-thread-count", options.http_threads,
                 "threads serving connections (each connection holds one while open: at least the number of "
                 "concurrent clients, for their requests to be batched together)")
      ->type_name("N")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  app.add_option("--max-request-bytes", options.max_request_bytes, "largest request body; larger ones get 413")
      ->type_name("BYTES")
      ->check(CLI::Range(std::size_t{1024}, std::size_t{1} << 34))
      ->capture_default_str();
  app.add_option("--max-tensor-elements", options.max_tensor_elements,
                 "most values an input tensor may declare; more is a 400")
      ->type_name("N")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 31))
      ->capture_default_str();
  app.add_option("--exit-on-error", options.exit_on_error,
                 "exit (status 1) when a model fails to load; false: serve the others, not ready")
      ->type_name("BOOL")
      ->capture_default_str();
}

int serve(const Options& options) {
  using namespace corgy::serve;
  // SIGINT and SIGTERM set a flag that the stopper thread below polls. A handler, not sigwait: threads that
  // libraries start before main (OpenBLAS's) would not have the signals blocked, and would die of them.
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  const std::vector<RepositoryEntry> entries = scan_repository(options.model_repository);
  Metrics metrics;
  ModelRegistry registry(entries, metrics);

  httplib::Server server;
  const int threads = options.http_threads;
  server.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<std::size_t>(threads)); };
  server.set_tcp_nodelay(true);  // else small responses wait for the delayed ACK of the request (40 ms)
  server.set_keep_alive_max_count(1000);
  server.set_keep_alive_timeout(2);  // an idle connection delays shutdown by this much at most
  server.set_read_timeout(10);
  server.set_write_timeout(10);
  // Debian's cpp-httplib 0.11 listens with a backlog of 5, compiled into its library: 32 clients connecting at once
  // overflowed it and some got their connection reset. The listening socket is kept here to listen again on it
  // with the system's largest backlog once it is bound.
  socket_t listening_socket = INVALID_SOCKET;
  server.set_socket_options([&listening_socket](socket_t socket) {
    httplib::default_socket_options(socket);
    listening_socket = socket;
  });
  install_routes(server, registry, metrics,
                 {.server_version = CORGY_SERVE_VERSION,
                  .max_request_bytes = options.max_request_bytes,
                  .limits = {.max_tensor_elements = options.max_tensor_elements}});

  int port = options.http_port;
  if (port == 0) {
    port = server.bind_to_any_port(options.http_address);
  } else if (!server.bind_to_port(options.http_address, port)) {
    port = -1;
  }
  if (port < 0) {
    std::fprintf(stderr, "corgy-serve: cannot listen on %s:%d\n", options.http_address.c_str(), options.http_port);
    return 1;
  }
  if (listening_socket != INVALID_SOCKET && ::listen(listening_socket, SOMAXCONN) != 0) {
    std::fprintf(stderr, "corgy-serve: note: the listen backlog stays at cpp-httplib's 5 (%s)\n", std::strerror(errno));
  }
  std::printf("listening on %s:%d\n", options.http_address.c_str(), port);
  std::fflush(stdout);

  // Stops the server on SIGINT/SIGTERM or when asked (a model failed with --exit-on-error). Server::stop() does
  // nothing before the server runs, so it waits for that; the HTTP threads then finish their requests.
  std::atomic<bool> stop_asked = false;
  std::atomic<bool> listen_returned = false;
  std::thread stopper([&] {
    bool stopping = false;
    while (!listen_returned) {
      if (!stopping && stop_signal != 0) {
        std::fprintf(stderr, "corgy-serve: signal %d: finishing the requests in flight\n",
                     static_cast<int>(stop_signal));
      }
      stopping = stop_signal != 0 || stop_asked;
      if (stopping && server.is_running()) {
        server.stop();
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  int status = 0;
  std::thread loader([&] {
    if (!registry.load_all() && options.exit_on_error) {
      std::fprintf(stderr, "corgy-serve: a model failed to load; exiting (--exit-on-error)\n");
      status = 1;
      stop_asked = true;
    }
  });

  const bool listened = server.listen_after_bind();
  listen_returned = true;
  stopper.join();
  loader.join();
  registry.stop_all();
  if (!listened && status == 0) {
    std::fprintf(stderr, "corgy-serve: the server failed\n");
    status = 1;
  }
  std::fprintf(stderr, "corgy-serve: stopped\n");
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"corgy-serve"};
  Options options;
  define_options(app, options);
  CLI11_PARSE(app, argc, argv);
  try {
    return serve(options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "corgy-serve: %s\n", e.what());
    return 1;
  }
}
