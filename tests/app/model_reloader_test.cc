// ModelReloader (server/app/model_reloader.h) on a repository of small random
// models written here, serving through a real FavorService: start-up loads
// and counts, and a reload pass installs changed and added folders, removes
// gone ones (never the default), and leaves what serves alone when a folder
// fails or has not changed. tests/service/reload_test.py runs the same
// under load through the real binary.
#include "server/app/model_reloader.h"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/batching/memory_budget.h"
#include "server/metrics/metric_names.h"
#include "server/model/model_fingerprint.h"
#include "server/model/random_model.h"
#include "tests/app/log_lines.h"
#include "tests/metrics/scrape.h"
#include "tests/model/model_config_test_util.h"
#include "tests/model/temp_dir_test.h"

namespace favor {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::Key;
using ::testing::Optional;

class ModelReloaderTest : public model::TempDirTest {
 protected:
  void TearDown() override {
    service_.reset();
    TempDirTest::TearDown();
  }

  // A tiny random model drawn from `seed`.
  void WriteModel(const std::string& name, uint64_t seed) {
    model::ModelConfig config = model::TinyConfig();
    config.version = "seed-" + std::to_string(seed);
    model::RandomModelOptions options;
    options.seed = seed;
    const absl::Status written =
        model::WriteRandomModel(config, Path(name), options);
    ASSERT_TRUE(written.ok()) << written;
  }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }

  // Metrics for the repository's folders, the reloader, LoadAll and the
  // service, as main.cc starts them.
  ModelReloader::Loaded Start() {
    ModelReloader::Options options;
    options.repository = dir_;
    reloader_ = std::make_unique<ModelReloader>(options);
    metrics::Metrics::Options metrics_options;
    metrics_options.serve_http = false;
    metrics_options.models = *reloader_->FolderNames();
    metrics_ = *metrics::Metrics::Create(metrics_options);
    options.metrics = metrics_.get();
    reloader_ = std::make_unique<ModelReloader>(options);
    absl::StatusOr<ModelReloader::Loaded> loaded = reloader_->LoadAll();
    EXPECT_TRUE(loaded.ok()) << loaded.status();
    service::FavorService::Options service_options;
    std::vector<service::FavorService::Servable> models;
    for (auto& servable : loaded->models) {
      loaded_names_.push_back(servable.model->name());
      models.push_back(std::move(servable));
    }
    auto service = service::FavorService::Create(
        service_options, std::move(models), metrics_.get());
    EXPECT_TRUE(service.ok()) << service.status();
    service_ = std::move(*service);
    return *std::move(loaded);
  }

  // The revision serving `name`, or "" when none does.
  std::string Serving(const std::string& name) const {
    auto lease = service_->registry().Find(name);
    return lease.ok() ? (*lease)->revision : "";
  }
  const service::ServingModel* Lease(const std::string& name) const {
    auto lease = service_->registry().Find(name);
    return lease.ok() ? lease->get() : nullptr;
  }
  // Whether favor_model_info has a series for `name`.
  bool HasModelInfo(const std::string& name) const {
    const std::string text = metrics_->SerializeText();
    const std::string series = absl::StrCat(metrics::kModelInfo, "{");
    for (absl::string_view line : absl::StrSplit(text, '\n')) {
      if (absl::StartsWith(line, series) &&
          absl::StrContains(line, absl::StrCat("model=\"", name, "\""))) {
        return true;
      }
    }
    return false;
  }
  std::optional<double> LoadFailures(const std::string& name) const {
    return metrics::scrape::FindSample(
        metrics_->SerializeText(),
        std::string(metrics::kModelLoadFailuresTotal), {{"model", name}});
  }

  std::vector<std::string> loaded_names_;  // by Start(), in its order
  std::unique_ptr<metrics::Metrics> metrics_;
  std::unique_ptr<ModelReloader> reloader_;
  std::unique_ptr<service::FavorService> service_;
};

TEST_F(ModelReloaderTest, StartUpLoadsEveryFolderAndCountsTheOneThatFails) {
  WriteModel("default", 1);
  WriteModel("other", 2);
  fs::create_directories(Path("broken"));
  std::ofstream(Path("broken") + "/config.json") << "{";
  const ModelReloader::Loaded loaded = Start();
  EXPECT_THAT(loaded_names_, ElementsAre("default", "other"));
  ASSERT_EQ(loaded.failures.size(), 1u);
  EXPECT_EQ(loaded.failures[0].first, "broken");
  EXPECT_EQ(Serving("default"), *model::FolderRevision(Path("default")));
  EXPECT_EQ(Serving("other"), *model::FolderRevision(Path("other")));
  EXPECT_EQ(Serving("broken"), "");
  EXPECT_THAT(LoadFailures("broken"), Optional(1.0));
  // A served model's failures count from zero, so increase() sees the first.
  EXPECT_THAT(LoadFailures("default"), Optional(0.0));
  EXPECT_TRUE(HasModelInfo("default"));
}

TEST_F(ModelReloaderTest, AReloadInstallsChangedAndNewAndRemovesGoneFolders) {
  WriteModel("default", 1);
  WriteModel("kept", 2);
  WriteModel("gone", 3);
  Start();
  const std::string first = Serving("default");
  const service::ServingModel* kept = Lease("kept");

  WriteModel("default", 4);
  WriteModel("late", 5);
  EXPECT_TRUE(HasModelInfo("gone"));
  fs::remove_all(Path("gone"));
  // Touched, not changed: the same revision, so not loaded again either.
  const fs::path config = Path("kept") + "/config.json";
  fs::last_write_time(config,
                      fs::last_write_time(config) + std::chrono::seconds(5));
  reloader_->Reload(service_.get());

  const std::string second = Serving("default");
  EXPECT_NE(second, first);
  EXPECT_EQ(second, *model::FolderRevision(Path("default")));
  EXPECT_EQ(Serving("late"), *model::FolderRevision(Path("late")));
  EXPECT_EQ(Serving("gone"), "");
  EXPECT_EQ(Lease("kept"), kept) << "an unchanged folder is not loaded again";
  EXPECT_EQ(Serving("kept"), *model::FolderRevision(Path("kept")));
  EXPECT_EQ(Lease("late")->model->config().version, "seed-5");
  // favor_model_info lists what serves: the gone model's series goes.
  EXPECT_TRUE(HasModelInfo("late"));
  EXPECT_FALSE(HasModelInfo("gone"));
  // The model added after start-up has its own metrics series.
  EXPECT_THAT(
      metrics::scrape::FindSample(
          metrics_->SerializeText(), std::string(metrics::kRequestsTotal),
          {{"model", "late"}, {"method", "Embed"}, {"code", "OK"}}),
      Optional(0.0));
}

// A poll a second that finds nothing new must not write a line a second.
TEST_F(ModelReloaderTest, APassThatChangesNothingLogsNothing) {
  WriteModel("default", 1);
  Start();
  testing::LogLines log;
  reloader_->Reload(service_.get());
  reloader_->Reload(service_.get());
  EXPECT_THAT(log.lines(), ::testing::IsEmpty());
  WriteModel("late", 2);
  reloader_->Reload(service_.get());
  const std::vector<std::string> lines = log.lines();
  ASSERT_FALSE(lines.empty());
  EXPECT_THAT(lines.back(), ::testing::HasSubstr(
                                "event=model_reload_done folders_changed=1"));
}

TEST_F(ModelReloaderTest, AFailedRevisionLeavesTheOldServingUntilFixed) {
  WriteModel("default", 1);
  Start();
  const service::ServingModel* first = Lease("default");
  {
    // Cut the weights short: the header still promises every tensor.
    const std::string weights = Path("default") + "/model.safetensors";
    fs::resize_file(weights, fs::file_size(weights) / 2);
  }
  reloader_->Reload(service_.get());
  EXPECT_EQ(Lease("default"), first);
  EXPECT_THAT(service_->registry().Failures(), ElementsAre(Key("default")));
  EXPECT_THAT(LoadFailures("default"), Optional(1.0));

  reloader_->Reload(service_.get());  // unchanged: not tried again
  EXPECT_THAT(LoadFailures("default"), Optional(1.0));
  // SIGHUP retries it, unchanged (a load refused for memory may fit now),
  // without config.json having to be touched.
  reloader_->Reload(service_.get(), /*retry_failed=*/true);
  EXPECT_THAT(LoadFailures("default"), Optional(2.0));
  EXPECT_EQ(Lease("default"), first);

  WriteModel("default", 6);
  reloader_->Reload(service_.get());
  EXPECT_NE(Lease("default"), first);
  EXPECT_EQ(Lease("default")->model->config().version, "seed-6");
  EXPECT_TRUE(service_->registry().Failures().empty());
  // Loaded: SIGHUP no longer reloads it.
  const service::ServingModel* loaded = Lease("default");
  reloader_->Reload(service_.get(), /*retry_failed=*/true);
  EXPECT_EQ(Lease("default"), loaded);
  EXPECT_THAT(LoadFailures("default"), Optional(2.0));
}

// A folder put back as it was after a failed load clears the failure from
// GetModel's load_error; it must not stay there until a restart.
TEST_F(ModelReloaderTest, AFolderRestoredAfterAFailureClearsIt) {
  WriteModel("default", 1);
  WriteModel("other", 2);
  Start();
  const service::ServingModel* first = Lease("other");
  const std::string weights = Path("other") + "/model.safetensors";
  const std::string saved = dir_ + "/saved.safetensors";
  fs::copy_file(weights, saved);
  fs::resize_file(weights, fs::file_size(weights) / 2);
  reloader_->Reload(service_.get());
  EXPECT_THAT(service_->registry().Failures(), ElementsAre(Key("other")));
  fs::copy_file(saved, weights, fs::copy_options::overwrite_existing);
  fs::remove(saved);
  reloader_->Reload(service_.get());
  EXPECT_EQ(Lease("other"), first) << "the same revision is not loaded again";
  EXPECT_TRUE(service_->registry().Failures().empty());

  // The same for a folder that went away and came back: "other" is
  // removed, so a new load; the default model keeps serving while gone.
  const std::string moved = dir_ + "/.moved";
  fs::rename(Path("default"), moved);
  reloader_->Reload(service_.get());
  EXPECT_THAT(service_->registry().Failures(), ElementsAre(Key("default")));
  fs::rename(moved, Path("default"));
  reloader_->Reload(service_.get());
  EXPECT_TRUE(service_->registry().Failures().empty());
}

// The weights of a revision being replaced or removed count as retiring
// in the memory budget from the start of the pass until the revision is
// freed (so that a request needing that room is told to retry, not that
// it can never run); a failed replacement, and the default model's folder
// gone, take that back.
TEST_F(ModelReloaderTest, ARetiredRevisionsWeightsCountAsRetiringUntilFreed) {
  WriteModel("default", 1);
  WriteModel("gone", 2);
  Start();
  auto bytes_of = [this](const std::string& name) {
    return BudgetedWeightBytes(*Lease(name)->model);
  };
  const int64_t default_bytes = bytes_of("default");
  const int64_t gone_bytes = bytes_of("gone");
  ASSERT_GT(default_bytes, 0);
  batching::MemoryBudget::Options budget_options;
  budget_options.max_bytes = int64_t{1} << 30;
  budget_options.resident_bytes = default_bytes + gone_bytes;  // start-up's
  auto budget = batching::MemoryBudget::Create(std::move(budget_options));
  ASSERT_TRUE(budget.ok()) << budget.status();
  reloader_->set_memory_budget(budget->get());

  {
    // Calls that still hold the old revisions keep them from being freed.
    auto old_default = *service_->registry().Find("default");
    auto old_gone = *service_->registry().Find("gone");
    WriteModel("default", 3);
    fs::remove_all(Path("gone"));
    reloader_->Reload(service_.get());
    ASSERT_NE(Lease("default"), old_default.get());
    EXPECT_EQ((*budget)->retiring_bytes(), default_bytes + gone_bytes);
    EXPECT_EQ((*budget)->resident_bytes(),
              default_bytes + gone_bytes + bytes_of("default"));
  }
  ASSERT_TRUE(service_->registry().WaitUntilFreed(absl::Seconds(30)));
  EXPECT_EQ((*budget)->retiring_bytes(), 0);
  EXPECT_EQ((*budget)->resident_bytes(), bytes_of("default"));

  // A replacement that fails to load: the serving revision is not retiring.
  const int64_t resident = (*budget)->resident_bytes();
  const std::string weights = Path("default") + "/model.safetensors";
  fs::resize_file(weights, fs::file_size(weights) / 2);
  reloader_->Reload(service_.get());
  EXPECT_THAT(service_->registry().Failures(), ElementsAre(Key("default")));
  EXPECT_EQ((*budget)->retiring_bytes(), 0);
  EXPECT_EQ((*budget)->resident_bytes(), resident);
  // The default model's folder gone: it keeps serving, so not retiring.
  fs::remove_all(Path("default"));
  reloader_->Reload(service_.get());
  EXPECT_NE(Lease("default"), nullptr);
  EXPECT_EQ((*budget)->retiring_bytes(), 0);
  reloader_->set_memory_budget(nullptr);  // the budget goes first
}

// The budget counts the projections drawn at load time beside the file's
// weights: a 3 MB folder of 1,024 layers and 65,536 features draws 2.1 GB
// that the file's size leaves out.
TEST_F(ModelReloaderTest, BudgetedBytesCountTheDrawnProjections) {
  WriteModel("default", 1);
  Start();
  const model::Model& model = *Lease("default")->model;
  const model::ModelConfig& config = model.config();
  ASSERT_EQ(model.description().num_stored_projections, 0);
  ASSERT_GT(config.attention.num_random_features, 0);
  const int64_t drawn = config.num_hidden_layers *
                        config.attention.num_random_features *
                        config.head_dim() * 4;
  EXPECT_EQ(BudgetedWeightBytes(model),
            model.description().parameter_count * 4 + drawn);
}

TEST_F(ModelReloaderTest, TheDefaultModelsFolderGoneKeepsItServing) {
  WriteModel("default", 1);
  WriteModel("other", 2);
  Start();
  const service::ServingModel* first = Lease("default");
  fs::remove_all(Path("default"));
  reloader_->Reload(service_.get());
  EXPECT_EQ(Lease("default"), first);
  EXPECT_NE(Lease("other"), nullptr);
}

}  // namespace
}  // namespace favor
