// How well each random-feature kernel approximates softmax attention (issue
// 15; the kind of result of Likhosherstov et al. 2022, Figure 4), on
// Favor's own feature maps, projections and attention, for d = 64:
//  - the kernel estimator's relative MSE, mean over all (q, k) pairs of
//    ((φ(q)ᵀφ(k) − exp(q'ᵀk')) / exp(q'ᵀk'))², on the unshifted features;
//  - the attention output against exact softmax, through Attend as served
//    (stabilisers and ε included): the rows' total-variation distance with
//    V = I (½ Σ_j |P̂_ij − P_ij|, averaged over rows) and the relative error
//    ‖P̂V − PV‖_F / ‖PV‖_F with random V;
// for trig, FAVOR+, hyperbolic and FAVOR++ × iid, orthogonal and simplex
// projections × m × σ, query and key entries ~ N(0, σ²). Each seed draws
// new inputs and new projections; cells give the mean over seeds ± their
// standard deviation. Prints markdown (docs/attention.md records a run),
// then the targets.
//
//   build/bench/approximation_study [--seeds=20] [--length=256]
//       [--m=16,64,256,1024] [--sigma=0.25,0.5,1,1.5] [--epsilon=1e-4]
//       [--sweep_a]
#include <ATen/ATen.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "server/attention/attention.h"
#include "server/attention/feature_map.h"
#include "server/attention/parallelism.h"
#include "server/attention/projection.h"

ABSL_FLAG(int, seeds, 20, "seeds per cell (inputs and projections)");
ABSL_FLAG(int, length, 256, "queries and keys per sequence (L)");
ABSL_FLAG(std::string, m, "16,64,256,1024", "feature counts, comma-separated");
ABSL_FLAG(std::string, sigma, "0.25,0.5,1,1.5",
          "standard deviations of the query and key entries");
ABSL_FLAG(double, epsilon, 1e-4, "ε of the positive features in Attend");
ABSL_FLAG(int, value_dim, 64, "columns of the random V");
ABSL_FLAG(int, threads, 0, "intra-op threads (0: one per core)");
ABSL_FLAG(bool, sweep_a, false,
          "instead: FAVOR++ at fixed multiples of A* (m = 256, orthogonal, "
          "ε = 0), to see which A the attention errors prefer");

namespace favor::attention {
namespace {

constexpr int64_t kDim = 64;

enum class Coupling { kIid, kOrthogonal, kSimplex };
constexpr Coupling kCouplings[] = {Coupling::kIid, Coupling::kOrthogonal,
                                   Coupling::kSimplex};
constexpr Kernel kKernels[] = {Kernel::kTrigonometric, Kernel::kFavorPositive,
                               Kernel::kFavorHyperbolic,
                               Kernel::kFavorPlusPlus};

const char* CouplingName(Coupling coupling) {
  constexpr const char* kNames[] = {"iid", "orthogonal", "simplex"};
  return kNames[static_cast<int>(coupling)];
}

struct StudyOptions {
  int seeds = 20;
  int64_t length = 256;
  int64_t value_dim = 64;
  std::vector<int64_t> feature_counts;
  std::vector<double> sigmas;
  float epsilon = 1e-4f;
};

// The errors of one (kernel, coupling, m, σ, seed).
struct Errors {
  double kernel_mse = 0;  // relative MSE of φ(q)ᵀφ(k)
  double total_variation = 0;
  double relative_error = 0;
  double weights_mse = 0;  // relative MSE of the rows P̂ (--sweep_a only)
};

// One seed's inputs and the exact answers, in double.
struct Inputs {
  at::Tensor q, k, v;     // (1, 1, L, d) and (1, 1, L, L + dv), float32
  at::Tensor kernel;      // exp(q'ᵀk'), (L, L)
  at::Tensor weights;     // softmax rows P, (L, L)
  at::Tensor random_out;  // P·V_random, (L, dv)
};

Inputs Draw(const StudyOptions& options, double sigma, int seed) {
  at::manual_seed(static_cast<uint64_t>(seed));
  const int64_t l = options.length;
  const at::Tensor q = at::randn({l, kDim}, at::kDouble) * sigma;
  const at::Tensor k = at::randn({l, kDim}, at::kDouble) * sigma;
  const at::Tensor v_random = at::randn({l, options.value_dim}, at::kDouble);
  const at::Tensor scores =
      at::matmul(q, k.t()) / std::sqrt(static_cast<double>(kDim));
  Inputs in;
  const auto dense = [](const at::Tensor& t) {
    return t.to(at::kFloat).view({1, 1, t.size(0), t.size(1)});
  };
  in.q = dense(q);
  in.k = dense(k);
  // V = [I | V_random]: the first L output columns are the rows of P̂.
  in.v = dense(at::cat({at::eye(l, at::kDouble), v_random}, 1));
  in.kernel = scores.exp();
  in.weights = at::softmax(scores, -1);
  in.random_out = at::matmul(in.weights, v_random);
  return in;
}

at::Tensor Projection(Coupling coupling, int64_t m, int seed) {
  ProjectionOptions options;
  options.num_features = m;
  options.head_dim = kDim;
  options.seed = static_cast<uint64_t>(seed);
  options.orthogonal = coupling != Coupling::kIid;
  options.simplex = coupling == Coupling::kSimplex;
  return *DrawProjection(options);
}

// φ(Q)φ(K)ᵀ from the unshifted features, ε = 0, in double; FAVOR++ with
// A* unless `a` is given.
at::Tensor KernelEstimate(Kernel kernel, const Inputs& in,
                          const at::Tensor& projection,
                          at::Tensor a = at::Tensor()) {
  if (kernel == Kernel::kFavorPlusPlus && !a.defined()) {
    a = *FavorPlusPlusCoefficient(in.q[0][0], in.k[0][0]);
  }
  const at::Tensor fq = *FeatureMap(in.q[0][0], kernel, projection,
                                    FeatureRole::kUnshifted, 0.0f, a);
  const at::Tensor fk = *FeatureMap(in.k[0][0], kernel, projection,
                                    FeatureRole::kUnshifted, 0.0f, a);
  return at::matmul(fq.to(at::kDouble), fk.to(at::kDouble).t());
}

double RelativeMse(const at::Tensor& estimate, const at::Tensor& exact) {
  return ((estimate - exact) / exact).square().mean().item<double>();
}

double TotalVariation(const at::Tensor& weights, const at::Tensor& exact) {
  return (0.5 * (weights - exact).abs().sum(1)).mean().item<double>();
}

Errors Measure(Kernel kernel, const Inputs& in, const at::Tensor& projection,
               const StudyOptions& options) {
  AttentionOptions attention;
  attention.kernel = kernel;
  attention.feature_epsilon = options.epsilon;
  const at::Tensor out =
      Attend(in.q, in.k, in.v, projection, at::Tensor(), attention)
          ->view({options.length, -1})
          .to(at::kDouble);
  const int64_t l = options.length;
  const at::Tensor weights = out.narrow(1, 0, l);
  const at::Tensor random_out = out.narrow(1, l, options.value_dim);
  Errors errors;
  errors.kernel_mse =
      RelativeMse(KernelEstimate(kernel, in, projection), in.kernel);
  errors.total_variation = TotalVariation(weights, in.weights);
  errors.relative_error =
      ((random_out - in.random_out).norm() / in.random_out.norm())
          .item<double>();
  return errors;
}

// Results by (kernel, coupling, m, σ), one Errors per seed.
using CellKey = std::tuple<Kernel, Coupling, int64_t, double>;
using Results = std::map<CellKey, std::vector<Errors>>;

Results Run(const StudyOptions& options) {
  Results results;
  for (double sigma : options.sigmas) {
    for (int seed = 0; seed < options.seeds; ++seed) {
      const Inputs in = Draw(options, sigma, seed);
      for (Coupling coupling : kCouplings) {
        for (int64_t m : options.feature_counts) {
          const at::Tensor projection = Projection(coupling, m, seed);
          for (Kernel kernel : kKernels) {
            results[{kernel, coupling, m, sigma}].push_back(
                Measure(kernel, in, projection, options));
          }
        }
      }
      std::fprintf(stderr, "σ = %g: seed %d of %d done\n", sigma, seed + 1,
                   options.seeds);
    }
  }
  return results;
}

// Mean and standard deviation over seeds of one metric.
struct Spread {
  double mean = 0, sd = 0;
};
using Metric = double Errors::*;

Spread SpreadOf(const std::vector<Errors>& runs, Metric metric) {
  Spread spread;
  for (const Errors& e : runs) spread.mean += e.*metric;
  spread.mean /= static_cast<double>(runs.size());
  for (const Errors& e : runs) {
    spread.sd += (e.*metric - spread.mean) * (e.*metric - spread.mean);
  }
  if (runs.size() > 1) {
    spread.sd = std::sqrt(spread.sd / static_cast<double>(runs.size() - 1));
  }
  return spread;
}

std::string Format(const Spread& s) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.3g ± %.2g", s.mean, s.sd);
  return text;
}

void PrintTable(const Results& results, const StudyOptions& options,
                const char* title, Metric metric) {
  std::printf("\n#### %s\n\n| kernel | projection | m |", title);
  for (double sigma : options.sigmas) std::printf(" σ = %g |", sigma);
  std::printf("\n| --- | --- | --: |");
  for (size_t i = 0; i < options.sigmas.size(); ++i) std::printf(" --: |");
  std::printf("\n");
  for (Kernel kernel : kKernels) {
    for (Coupling coupling : kCouplings) {
      for (int64_t m : options.feature_counts) {
        std::printf("| %s | %s | %lld |",
                    std::string(KernelName(kernel)).c_str(),
                    CouplingName(coupling), static_cast<long long>(m));
        for (double sigma : options.sigmas) {
          const auto& runs = results.at({kernel, coupling, m, sigma});
          std::printf(" %s |", Format(SpreadOf(runs, metric)).c_str());
        }
        std::printf("\n");
      }
    }
  }
}

// One target line: `ratio` against `bound` (at least), or "not run" when
// the cell is not in this run (other --m or --sigma).
void PrintRatio(const Results& results, const char* what, Metric metric,
                int64_t m, double sigma, double bound) {
  const auto plus =
      results.find({Kernel::kFavorPositive, Coupling::kOrthogonal, m, sigma});
  const auto plus_plus =
      results.find({Kernel::kFavorPlusPlus, Coupling::kOrthogonal, m, sigma});
  if (plus == results.end() || plus_plus == results.end()) {
    std::printf("| %s | not run | ≥ %g | |\n", what, bound);
    return;
  }
  const double ratio = SpreadOf(plus->second, metric).mean /
                       SpreadOf(plus_plus->second, metric).mean;
  std::printf("| %s | %.2f | ≥ %g | %s |\n", what, ratio, bound,
              ratio >= bound ? "ok" : "MISSED");
}

// Cells where simplex's mean exceeds orthogonal's by more than the larger
// of their two standard deviations, over FAVOR+ and FAVOR++ and every
// metric, one line each.
std::vector<std::string> SimplexAboveOrthogonal(const Results& results,
                                                const StudyOptions& options) {
  const std::pair<Metric, const char*> metrics[] = {
      {&Errors::kernel_mse, "kernel rel. MSE"},
      {&Errors::total_variation, "TV"},
      {&Errors::relative_error, "rel. error"}};
  std::vector<std::string> above;
  for (Kernel kernel : {Kernel::kFavorPositive, Kernel::kFavorPlusPlus}) {
    for (const auto& [metric, name] : metrics) {
      for (int64_t m : options.feature_counts) {
        for (double sigma : options.sigmas) {
          const Spread s = SpreadOf(
              results.at({kernel, Coupling::kSimplex, m, sigma}), metric);
          const Spread o = SpreadOf(
              results.at({kernel, Coupling::kOrthogonal, m, sigma}), metric);
          if (s.mean <= o.mean + std::max(s.sd, o.sd)) continue;
          char line[200];
          std::snprintf(line, sizeof(line),
                        "%s, %s, m = %lld, σ = %g: %s vs %s",
                        std::string(KernelName(kernel)).c_str(), name,
                        static_cast<long long>(m), sigma, Format(s).c_str(),
                        Format(o).c_str());
          above.push_back(line);
        }
      }
    }
  }
  return above;
}

void PrintTargets(const Results& results, const StudyOptions& options) {
  std::printf("\n#### Targets (orthogonal projections)\n\n");
  std::printf("| target | measured | bound | |\n| --- | --: | --: | --- |\n");
  PrintRatio(results, "FAVOR+ / FAVOR++ kernel rel. MSE, m = 256, σ = 1",
             &Errors::kernel_mse, 256, 1.0, 3.0);
  PrintRatio(results, "FAVOR+ / FAVOR++ attention TV, m = 256, σ = 0.5",
             &Errors::total_variation, 256, 0.5, 1.2);
  const std::vector<std::string> above =
      SimplexAboveOrthogonal(results, options);
  std::printf(
      "| FAVOR+/FAVOR++ cells where simplex > orthogonal beyond the spread | "
      "%zu | ≤ 0 | %s |\n",
      above.size(), above.empty() ? "ok" : "MISSED");
  if (!above.empty()) std::printf("\nSimplex above orthogonal:\n\n");
  for (const std::string& line : above) std::printf("- %s\n", line.c_str());
}

// --sweep_a: FAVOR++ with A = c·A* for each c, m = 256 orthogonal features,
// attention as the normalised unshifted estimate (ε = 0, no stabiliser).
constexpr double kSweepMultiples[] = {0.0, 0.5, 1.0, 1.5, 2.0, 4.0};

std::map<std::pair<double, double>, std::vector<Errors>> Sweep(
    const StudyOptions& options) {
  std::map<std::pair<double, double>, std::vector<Errors>> results;
  for (double sigma : options.sigmas) {
    for (int seed = 0; seed < options.seeds; ++seed) {
      const Inputs in = Draw(options, sigma, seed);
      const at::Tensor projection =
          Projection(Coupling::kOrthogonal, 256, seed);
      const at::Tensor optimal =
          *FavorPlusPlusCoefficient(in.q[0][0], in.k[0][0]);
      for (double multiple : kSweepMultiples) {
        const at::Tensor estimate = KernelEstimate(
            Kernel::kFavorPlusPlus, in, projection, optimal * multiple);
        const at::Tensor weights = estimate / estimate.sum(1, true);
        Errors e;
        e.kernel_mse = RelativeMse(estimate, in.kernel);
        e.weights_mse = RelativeMse(weights, in.weights);
        e.total_variation = TotalVariation(weights, in.weights);
        results[{multiple, sigma}].push_back(e);
      }
    }
  }
  return results;
}

void PrintSweep(const StudyOptions& options) {
  const auto results = Sweep(options);
  std::printf("\n#### FAVOR++ at A = c·A* (m = 256, orthogonal, ε = 0)\n\n");
  std::printf("| c | σ | kernel rel. MSE | weights rel. MSE | TV |\n");
  std::printf("| --: | --: | --: | --: | --: |\n");
  for (double sigma : options.sigmas) {
    for (double multiple : kSweepMultiples) {
      const auto& runs = results.at({multiple, sigma});
      std::printf("| %g | %g | %s | %s | %s |\n", multiple, sigma,
                  Format(SpreadOf(runs, &Errors::kernel_mse)).c_str(),
                  Format(SpreadOf(runs, &Errors::weights_mse)).c_str(),
                  Format(SpreadOf(runs, &Errors::total_variation)).c_str());
    }
  }
}

// "16,64" into {16, 64}: false unless every item is a positive number.
template <typename T>
bool ParseList(const std::string& text, std::vector<T>& out) {
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    double parsed = 0;
    if (!absl::SimpleAtod(item, &parsed) || parsed <= 0) return false;
    out.push_back(static_cast<T>(parsed));
  }
  return !out.empty();
}

// The baseline a kernel must beat: uniform attention (every weight 1/L),
// which is also what positive features give once ε outweighs them.
void PrintUniformBaseline(const StudyOptions& options) {
  std::printf("\n#### Uniform attention, for comparison\n\n| |");
  for (double sigma : options.sigmas) std::printf(" σ = %g |", sigma);
  std::printf("\n| --- |");
  for (size_t i = 0; i < options.sigmas.size(); ++i) std::printf(" --: |");
  std::vector<std::vector<Errors>> runs(options.sigmas.size());
  for (size_t i = 0; i < options.sigmas.size(); ++i) {
    for (int seed = 0; seed < options.seeds; ++seed) {
      const Inputs in = Draw(options, options.sigmas[i], seed);
      const at::Tensor uniform =
          at::full_like(in.weights, 1.0 / in.weights.size(1));
      const at::Tensor v = in.v[0][0]
                               .narrow(1, options.length, options.value_dim)
                               .to(at::kDouble);
      Errors e;
      e.total_variation = TotalVariation(uniform, in.weights);
      e.relative_error = ((at::matmul(uniform, v) - in.random_out).norm() /
                          in.random_out.norm())
                             .item<double>();
      runs[i].push_back(e);
    }
  }
  for (const auto& [name, metric] :
       {std::pair<const char*, Metric>{"TV", &Errors::total_variation},
        {"relative error", &Errors::relative_error}}) {
    std::printf("\n| %s |", name);
    for (const auto& r : runs)
      std::printf(" %s |", Format(SpreadOf(r, metric)).c_str());
  }
  std::printf("\n");
}

void PrintStudy(const StudyOptions& options) {
  const Results results = Run(options);
  PrintTable(results, options, "Kernel relative MSE", &Errors::kernel_mse);
  PrintTable(results, options, "Attention TV distance (V = I)",
             &Errors::total_variation);
  PrintTable(results, options, "Attention relative error (random V)",
             &Errors::relative_error);
  PrintUniformBaseline(options);
  PrintTargets(results, options);
}

// The flags (defined next to main) into StudyOptions; false on bad values.
bool ReadFlags(StudyOptions& options) {
  options.seeds = absl::GetFlag(FLAGS_seeds);
  options.length = absl::GetFlag(FLAGS_length);
  options.value_dim = absl::GetFlag(FLAGS_value_dim);
  options.epsilon = static_cast<float>(absl::GetFlag(FLAGS_epsilon));
  return ParseList(absl::GetFlag(FLAGS_m), options.feature_counts) &&
         ParseList(absl::GetFlag(FLAGS_sigma), options.sigmas) &&
         options.seeds >= 1 && options.length >= 1 && options.value_dim >= 1;
}

}  // namespace
}  // namespace favor::attention

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Approximation study of the random-feature kernels against exact "
      "softmax; prints markdown.");
  absl::ParseCommandLine(argc, argv);
  favor::attention::StudyOptions options;
  if (!favor::attention::ReadFlags(options)) {
    std::fprintf(stderr,
                 "--m and --sigma take positive comma-separated numbers; "
                 "--seeds, --length and --value_dim at least 1\n");
    return 2;
  }
  favor::attention::CpuParallelismOptions parallelism;
  parallelism.num_threads = absl::GetFlag(FLAGS_threads);
  favor::attention::ConfigureCpuParallelism(parallelism);
  std::printf(
      "d = %lld, L = %lld, %d seeds, ε = %g, random V with %lld "
      "columns; cells: mean ± standard deviation over seeds.\n",
      static_cast<long long>(favor::attention::kDim),
      static_cast<long long>(options.length), options.seeds, options.epsilon,
      static_cast<long long>(options.value_dim));
  if (absl::GetFlag(FLAGS_sweep_a)) {
    favor::attention::PrintSweep(options);
  } else {
    favor::attention::PrintStudy(options);
  }
  return 0;
}
