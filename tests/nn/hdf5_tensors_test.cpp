// Reading weights from a plain HDF5 file, as h5py or another framework writes one.
#include "test_util.h"

#include <dlf/nn/checkpoint.h>
#include <hdf5.h>
#include <unistd.h>

#include <filesystem>

using namespace dlf;
using dlf::test::check_error;
namespace fs = std::filesystem;

namespace {

// A dataset at `path` (its groups made on the way), chunked and gzip'd when `compressed`.
template <typename T>
void write_dataset(hid_t file, const std::string& path, hid_t type,
                   const std::vector<hsize_t>& dims, const std::vector<T>& values,
                   bool compressed = false) {
  const hid_t links = H5Pcreate(H5P_LINK_CREATE);
  H5Pset_create_intermediate_group(links, 1);
  const hid_t space = H5Screate_simple(int(dims.size()), dims.data(), nullptr);
  const hid_t create = H5Pcreate(H5P_DATASET_CREATE);
  if (compressed) {
    H5Pset_chunk(create, int(dims.size()), dims.data());
    H5Pset_deflate(create, 6);
  }
  const hid_t ds = H5Dcreate2(file, path.c_str(), type, space, links, create, H5P_DEFAULT);
  REQUIRE(ds >= 0);
  REQUIRE(H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) >= 0);
  H5Dclose(ds);
  H5Pclose(create);
  H5Sclose(space);
  H5Pclose(links);
}

}  // namespace

TEST_CASE("read_hdf5_tensors: a plain file's datasets by dotted path, floats and integers") {
  const fs::path path =
      fs::temp_directory_path() / ("dlf_plain_" + std::to_string(getpid()) + ".h5");
  const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  REQUIRE(file >= 0);
  write_dataset<float>(file, "transformer/h/0/ln_1/weight", H5T_NATIVE_FLOAT, {3}, {1, 2, 3});
  write_dataset<double>(file, "transformer/wte.weight", H5T_NATIVE_DOUBLE, {2, 2},
                        {0.5, -1, 2, 1e-300}, true);
  write_dataset<int16_t>(file, "steps", H5T_NATIVE_INT16, {2}, {7, -8});
  write_dataset<char>(file, "note", H5T_C_S1, {1}, {'x'});
  H5Fclose(file);

  check_error([&] { nn::read_hdf5_tensors(path.string()); },
              {"dataset 'note'", "neither floats nor integers"});
  const hid_t again = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  H5Ldelete(again, "note", H5P_DEFAULT);
  H5Fclose(again);

  const nn::NamedTensors t = nn::read_hdf5_tensors(path.string());
  fs::remove(path);
  REQUIRE(t.size() == 3);
  CHECK(t[0].first == "steps");
  CHECK(t[0].second.dtype() == DType::i64);
  CHECK(t[0].second.to_vector<int64_t>() == std::vector<int64_t>{7, -8});
  CHECK(t[1].first == "transformer.h.0.ln_1.weight");
  CHECK(t[1].second.dtype() == DType::f32);
  CHECK(t[1].second.to_vector<float>() == std::vector<float>{1, 2, 3});
  CHECK(t[2].first == "transformer.wte.weight");
  CHECK(t[2].second.shape() == Shape{2, 2});
  CHECK(t[2].second.to_vector<double>() == std::vector<double>{0.5, -1, 2, 1e-300});

  check_error([] { nn::read_hdf5_tensors("/nonexistent/weights.h5"); },
              {"/nonexistent/weights.h5"});
}
