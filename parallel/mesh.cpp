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

Mesh::Mesh(Layout layout, std::unique_ptr<Communicator> dp, std::unique_ptr<Communicator> tp,
           std::unique_ptr<Communicator> pp)
    : layout_(layout), dp_(std::move(dp)), tp_(std::move(tp)), pp_(std::move(pp)) {
  DLF_CHECK(dp_ && tp_ && pp_ && dp_->size() == layout.dp && tp_->size() == layout.tp &&
                pp_->size() == layout.pp,
            "mesh: groups of dp ", dp_ ? dp_->size() : 0, ", tp ", tp_ ? tp_->size() : 0,
            " and pp ", pp_ ? pp_->size() : 0, " ranks for a layout of dp ", layout.dp, " x tp ",
            layout.tp, " x pp ", layout.pp);
}

}  // namespace dlf::parallel
