// The runner of the Attend path: the Attend batcher (one request per
// batch, so its queue, deadlines, cancellation and drain are the same as
// Embed's) hands each AttendRequest to the attention library. The request
// and response protos are read and written in place (the call keeps them
// alive until it is answered).
//
// This header is LibTorch-free; attend_runner.cc is the only file of the
// service that includes ATen.
#ifndef FAVOR_SERVER_SERVICE_ATTEND_RUNNER_H_
#define FAVOR_SERVER_SERVICE_ATTEND_RUNNER_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "favor/v1/favor.pb.h"
#include "server/batching/clock.h"
#include "server/batching/job.h"
#include "server/service/attend_validation.h"

namespace favor::service {

// The work of one Attend call's batching::Job.
struct AttendWork {
  const v1::AttendRequest* request = nullptr;  // validated
  AttendPlan plan;
  v1::AttendResponse* response = nullptr;  // output, kernel, num_features
  absl::Duration queue_time;
  absl::Duration compute_time;
};

// Computes one attention on `device` (a name that attention::ParseDevice
// accepts: "cpu", "cuda" or "cuda:N"); the tensors are copied there and the
// output back (attend_inputs.h). INVALID_ARGUMENT for NaN or infinity in a
// tensor or for a bad device, RESOURCE_EXHAUSTED when the device runs out
// of memory, INTERNAL for another LibTorch failure.
absl::Status ComputeAttend(const AttendPlan& plan,
                           const v1::AttendRequest& request,
                           absl::string_view device,
                           v1::AttendResponse* response);

class AttendRunner final : public batching::JobRunner<AttendWork> {
 public:
  // Runs every Attend call on `device` (the models' device, --device);
  // INVALID_ARGUMENT when attention::ParseDevice refuses it. `clock` must
  // outlive the runner.
  static absl::StatusOr<std::unique_ptr<AttendRunner>> Create(
      batching::Clock* clock, const std::string& device);

  absl::Status RunJobs(
      int worker_index,
      absl::Span<batching::Job<AttendWork>* const> jobs) override;

 private:
  AttendRunner(batching::Clock* clock, const std::string& device)
      : clock_(clock), device_(device) {}

  batching::Clock* const clock_;
  const std::string device_;
};

}  // namespace favor::service

#endif  // FAVOR_SERVER_SERVICE_ATTEND_RUNNER_H_
