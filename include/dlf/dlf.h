// The dlf public API in one include.
#pragma once

#include <dlf/autograd/backward.h>
#include <dlf/autograd/grad_mode.h>
#include <dlf/autograd/gradcheck.h>
#include <dlf/autograd/node.h>
#include <dlf/core/dtype.h>
#include <dlf/core/factory.h>
#include <dlf/core/op.h>
#include <dlf/core/ops/conv.h>
#include <dlf/core/ops/elementwise.h>
#include <dlf/core/ops/join.h>
#include <dlf/core/ops/linalg.h>
#include <dlf/core/ops/nn_ops.h>
#include <dlf/core/ops/normalization.h>
#include <dlf/core/ops/reduce.h>
#include <dlf/core/random.h>
#include <dlf/core/shape.h>
#include <dlf/core/tensor.h>
#include <dlf/device/allocator.h>
#include <dlf/device/device.h>
#include <dlf/device/threads.h>
#include <dlf/error.h>
#include <dlf/nn/module.h>
#include <dlf/nn/optim/optimizer.h>
#include <dlf/nn/optim/schedule.h>
