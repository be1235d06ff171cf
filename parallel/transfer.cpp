#include <dlf/core/factory.h>
#include <dlf/parallel/transfer.h>

namespace dlf::parallel {
namespace {

constexpr int64_t kMaxDims = 8;
// A tensor's header: the name's length, the dtype, the rank, then the sizes.
constexpr int64_t kHeader = 3 + kMaxDims;

void send_i64(Communicator& comm, const std::vector<int64_t>& values, int dst) {
  comm.send(from_vector(values).to(comm.device()), dst);
}

std::vector<int64_t> recv_i64(Communicator& comm, int64_t count, int src) {
  return comm.recv({count}, DType::i64, src).to(kCPU).to_vector<int64_t>();
}

}  // namespace

void send_named(Communicator& comm, const nn::NamedTensors& tensors, int dst) {
  send_i64(comm, {int64_t(tensors.size())}, dst);
  for (const auto& [name, t] : tensors) {
    DLF_CHECK(t.dim() <= kMaxDims, "send_named: '", name, "' has more than ", kMaxDims, " dims");
    std::vector<int64_t> header(kHeader, 0);
    header[0] = int64_t(name.size());
    header[1] = int64_t(t.dtype());
    header[2] = t.dim();
    for (int64_t d = 0; d < t.dim(); ++d) header[3 + d] = t.size(d);
    send_i64(comm, header, dst);
    send_i64(comm, std::vector<int64_t>(name.begin(), name.end()), dst);
    comm.send(t.contiguous(), dst);
  }
}

nn::NamedTensors recv_named(Communicator& comm, int src) {
  const int64_t count = recv_i64(comm, 1, src)[0];
  nn::NamedTensors out;
  for (int64_t i = 0; i < count; ++i) {
    const std::vector<int64_t> header = recv_i64(comm, kHeader, src);
    const std::vector<int64_t> chars = recv_i64(comm, header[0], src);
    const Shape shape(header.begin() + 3, header.begin() + 3 + header[2]);
    out.emplace_back(std::string(chars.begin(), chars.end()),
                     comm.recv(shape, static_cast<DType>(header[1]), src));
  }
  return out;
}

}  // namespace dlf::parallel
