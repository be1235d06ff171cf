// Prefetcher: makes batch i+1 on a background thread while the caller trains on batch i.
#pragma once
#include <cstdint>
#include <functional>
#include <future>

namespace dlf::nn::data {

template <typename Batch>
/// Makes the next item on a thread of its own while the caller uses this one.
class Prefetcher {
 public:
  /// Batches make(first), make(first + 1), ...; make must be safe to call from another thread.
  Prefetcher(std::function<Batch(int64_t)> make, int64_t first)
      : make_(std::move(make)), next_index_(first) {
    launch();
  }
  ~Prefetcher() {
    if (pending_.valid()) pending_.wait();
  }
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  /// The next batch (an exception thrown by make is rethrown here); starts the one after.
  Batch next() {
    Batch batch = pending_.get();
    launch();
    return batch;
  }

 private:
  void launch() { pending_ = std::async(std::launch::async, make_, next_index_++); }

  std::function<Batch(int64_t)> make_;
  int64_t next_index_;
  std::future<Batch> pending_;
};

}  // namespace dlf::nn::data
