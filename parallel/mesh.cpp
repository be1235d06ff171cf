#include <dlf/parallel/mesh.h>

namespace dlf::parallel {

Mesh::Mesh(Communicator& world, Layout layout) : layout_(layout) {
  DLF_CHECK(layout.dp > 0 && layout.tp > 0 && layout.pp > 0,
            "mesh: dp, tp and pp must be positive");
  DLF_CHECK(layout.devices() == world.size(), "mesh: dp ", layout.dp, " x tp ", layout.tp, " x pp ",
            layout.pp, " = ", layout.devices(), " ranks, but the world has ", world.size());
  const int r = world.rank(), tp = layout.tp, pp = layout.pp;
  const int tp_rank = r % tp, pp_rank = r / tp % pp, dp_rank = r / (tp * pp);
  // A group is the ranks that agree on the other two coordinates.
  tp_ = world.split(dp_rank * pp + pp_rank, tp_rank, "tp");
  pp_ = world.split(dp_rank * tp + tp_rank, pp_rank, "pp");
  dp_ = world.split(pp_rank * tp + tp_rank, dp_rank, "dp");
}

}  // namespace dlf::parallel
