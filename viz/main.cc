// kvsim-viz: the interactive viewer. A GLFW window with an OpenGL 3.3 context, ImGui's GLFW
// and OpenGL3 backends, and the Viewer (viz/viewer.h) drawing each frame.
//
//   kvsim-viz [SCENARIO] [--set k=v]... [--panel NAME] [--sweep CSV] [--trace JSONL]
//             [--steps STEP_LOG.jsonl]
//   kvsim-viz --requests REQUESTS.jsonl --num-gpu-blocks N [kvsim schedule's flags] [--step S]
//             (runs the step clock; the Steps and Block pool panels show it)
//   kvsim-viz [SCENARIO] --run [--step S]   (runs the scenario through the engine)
//   kvsim-viz SCENARIO --screenshot OUT.png [--panel NAME] [--size WxH]   (headless: xvfb-run)
//   kvsim-viz SCENARIO --frames N [--panel NAME]    (timed run: prints frames per second)
//
// Exit codes: 0 ok, 2 bad input (scenario, panel, size, a --step past the run), 1 no
// display / GL failure, 4 the --screenshot could not be written (as kvsim's unwritable outputs).
#include <GLFW/glfw3.h>
#include <imgui.h>
#include <imgui_impl_glfw.h>
#include <imgui_impl_opengl3.h>

#include <time.h>
#include <CLI/CLI.hpp>
#include <algorithm>

#include <cfloat>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "viz/png_image.h"
#include "viz/viewer.h"

// The build's version text, generated with kvsim's (cmake/version.cmake).
const char* KvsimVersion();

namespace {

constexpr int kExitWriteFailed = 4;  // kvsim's code for an output it could not write

void GlfwError(int code, const char* what) {
  std::fprintf(stderr, "GLFW error %d: %s\n", code, what);
}

kvsim::viz::Image ReadBackBuffer(int w, int h) {
  kvsim::viz::Image img;
  img.width = w;
  img.height = h;
  img.rgba.resize(static_cast<size_t>(w) * h * 4);
  std::vector<uint8_t> bottom_up(img.rgba.size());
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadBuffer(GL_BACK);
  glReadPixels(0, 0, w, h, GL_RGBA, GL_UNSIGNED_BYTE, bottom_up.data());
  const size_t row = static_cast<size_t>(w) * 4;
  for (int y = 0; y < h; ++y) {
    std::copy_n(&bottom_up[static_cast<size_t>(h - 1 - y) * row], row,
                &img.rgba[static_cast<size_t>(y) * row]);
  }
  for (size_t i = 3; i < img.rgba.size(); i += 4) img.rgba[i] = 255;  // opaque PNGs
  return img;
}

// CPU seconds used by every thread of the process (llvmpipe renders on worker threads), so
// a timed run on a busy machine can still say what a frame costs.
double ProcessCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

bool ParseSize(const std::string& s, int* w, int* h) {
  return std::sscanf(s.c_str(), "%dx%d", w, h) == 2 && *w >= 320 && *h >= 240 && *w <= 8192 &&
         *h <= 8192;
}

bool ParsePoint(const std::string& s, float* x, float* y) {
  return std::sscanf(s.c_str(), "%f,%f", x, y) == 2;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kvsim-viz: an interactive view of KV cache plans, pages and sweeps"};
  app.set_version_flag("--version", std::string("kvsim-viz ") + KvsimVersion());
  std::string scenario, screenshot, panel, size = "1600x900", sweep, trace, mouse, steps;
  std::vector<std::string> sets;
  int frames = 0;
  kvsim::viz::ScheduleOptions sched;
  bool run_scenario = false;
  int64_t step = -1;
  std::string font = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
  app.add_option("scenario", scenario, "scenario file (default: the built-in default scenario)");
  app.add_option("--set", sets, "override a scenario key, e.g. --set cache.attn_pack_size=4");
  app.add_option("--screenshot", screenshot, "render, write this PNG and exit");
  app.add_option("--panel", panel, "panel to open: plan, page_map, block_pool, sweep, steps");
  app.add_option("--size", size, "window size WxH (default 1600x900)");
  app.add_option("--sweep", sweep, "sweep CSV for the Sweep panel");
  app.add_option("--trace", trace, "request trace (JSONL) for the Block pool panel");
  app.add_option("--steps", steps, "step log (JSONL, kvsim schedule --step-log) for the Steps panel");
  // A simulation for the Steps and Block pool panels: kvsim schedule's flags, same names.
  app.add_option("--requests", sched.requests,
                 "REQUESTS.jsonl: run kvsim schedule's step clock (needs --num-gpu-blocks)");
  app.add_option("--block-size", sched.block_size, "schedule: tokens per KV block")
      ->capture_default_str();
  app.add_option("--num-gpu-blocks", sched.num_gpu_blocks,
                 "schedule: total KV blocks (block 0 is the null block)");
  app.add_option("--max-num-batched-tokens", sched.max_num_batched_tokens,
                 "schedule: token budget per step")
      ->capture_default_str();
  app.add_option("--max-num-seqs", sched.max_num_seqs, "schedule: maximum running requests")
      ->capture_default_str();
  app.add_option("--policy", sched.policy, "schedule: fcfs or priority")
      ->check(CLI::IsMember({"fcfs", "priority"}))
      ->capture_default_str();
  app.add_flag("--async-scheduling", sched.async_scheduling,
               "schedule: decide step k+1 before step k's outputs are applied");
  app.add_option("--vllm-semantics", sched.semantics, "schedule: classic or latest")
      ->check(CLI::IsMember({"classic", "latest"}))
      ->capture_default_str();
  app.add_option("--num-cpu-blocks", sched.num_cpu_blocks,
                 "schedule: CPU offloading tier in offloaded blocks (0 = none)")
      ->capture_default_str();
  app.add_option("--offload-block-size", sched.offload_block_size,
                 "schedule: tokens per offloaded block (0 = the block size)")
      ->capture_default_str();
  app.add_option("--eviction-policy", sched.eviction_policy, "schedule: the CPU tier's lru or arc")
      ->check(CLI::IsMember({"lru", "arc"}))
      ->capture_default_str();
  app.add_option("--xfer-timing", sched.xfer_timing, "schedule: instant or next-step copies")
      ->check(CLI::IsMember({"instant", "next-step"}))
      ->capture_default_str();
  app.add_flag("--run", run_scenario,
               "run the scenario through the engine (kvsim run, base point)");
  app.add_option("--step", step, "with a simulation: select this step first");
  app.add_option("--frames", frames, "run this many frames without vsync, print fps and exit");
  app.add_option("--font", font, "TTF font for the UI (default DejaVu Sans)");
  app.add_option("--mouse", mouse, "hold the mouse at X,Y (screenshots of hover tooltips)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  int width = 0, height = 0;
  if (!ParseSize(size, &width, &height)) {
    std::fprintf(stderr, "kvsim-viz: --size %s: expected WxH between 320x240 and 8192x8192\n",
                 size.c_str());
    return 2;
  }
  float mouse_x = -1, mouse_y = -1;
  if (!mouse.empty() && !ParsePoint(mouse, &mouse_x, &mouse_y)) {
    std::fprintf(stderr, "kvsim-viz: --mouse %s: expected X,Y\n", mouse.c_str());
    return 2;
  }

  // The screenshot's folder is made up front, as `kvsim --trace` makes its parents: a
  // path that cannot be written fails before the scenario runs, not after.
  if (!screenshot.empty()) {
    const std::filesystem::path parent = std::filesystem::path(screenshot).parent_path();
    std::error_code ec;
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);
    if (ec) {
      std::fprintf(stderr, "kvsim-viz: error: --screenshot %s: cannot create %s: %s\n",
                   screenshot.c_str(), parent.c_str(), ec.message().c_str());
      return kExitWriteFailed;
    }
  }
  if (sched.requests.empty() && !(sched == kvsim::viz::ScheduleOptions{})) {
    std::fprintf(stderr, "kvsim-viz: the schedule flags need --requests REQUESTS.jsonl\n");
    return 2;
  }

  kvsim::viz::ViewerOptions opts;
  opts.scenario_path = scenario;
  opts.overrides = sets;
  opts.sweep_csv = sweep;
  opts.trace = trace;
  opts.step_log = steps;
  opts.schedule = sched;
  opts.run_scenario = run_scenario;
  opts.step = step;
  opts.panel = panel.empty() ? "plan" : panel;
  opts.wait_for_runs = frames > 0 || !screenshot.empty();
  auto viewer_or = kvsim::viz::Viewer::Create(opts);
  if (!viewer_or.ok()) {
    std::fprintf(stderr, "kvsim-viz: error: %s\n", viewer_or.status().message().c_str());
    return 2;
  }
  kvsim::viz::Viewer& viewer = *viewer_or.value();

  glfwSetErrorCallback(GlfwError);
  if (!glfwInit()) {
    std::fprintf(stderr,
                 "kvsim-viz: cannot open a window (no display?); for headless use run "
                 "under xvfb-run -a\n");
    return 1;
  }
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  std::string title = viewer.WindowTitle();
  GLFWwindow* window = glfwCreateWindow(width, height, title.c_str(), nullptr, nullptr);
  if (!window) {
    std::fprintf(stderr, "kvsim-viz: cannot create an OpenGL 3.3 window\n");
    glfwTerminate();
    return 1;
  }
  glfwMakeContextCurrent(window);
  const bool timed = frames > 0 || !screenshot.empty();
  glfwSwapInterval(timed ? 0 : 1);

  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;
  ImGui::StyleColorsDark();
  // DejaVu Sans (Debian's fonts-dejavu-core) when present: it has the arrows, dashes and
  // ellipses the panels print. ImGui's built-in font is the fallback.
  static const ImWchar kRanges[] = {0x0020, 0x00FF, 0x2000, 0x206F, 0x2190, 0x21FF,
                                    0x2200, 0x22FF, 0x25A0, 0x25FF, 0};
  if (FILE* f = std::fopen(font.c_str(), "rb")) {
    std::fclose(f);
    io.Fonts->AddFontFromFileTTF(font.c_str(), 15.0f, nullptr, kRanges);
  } else {
    io.Fonts->AddFontDefault();
  }
  ImGui_ImplGlfw_InitForOpenGL(window, true);
  ImGui_ImplOpenGL3_Init("#version 330");

  // A screenshot renders 20 frames first: tables and auto-sized widgets settle on frame 2,
  // and the status bar's frame rate is an average over the frames drawn so far.
  const int total = !screenshot.empty() ? std::max(frames, 20) : frames;
  using Clock = std::chrono::steady_clock;
  constexpr int kWarmup = 10;
  Clock::time_point t0;
  double cpu0 = 0;
  double worst_ms = 0;
  double ui_ms = 0, gl_ms = 0;  // CPU time building the UI, and rendering it (to glFinish)
  Clock::time_point last = Clock::now();
  int rc = 0;
  int shot_count = 0;
  for (int frame = 0; !glfwWindowShouldClose(window) && !viewer.quit_requested(); ++frame) {
    if (total > 0 && frame == total) break;
    if (frame == kWarmup) {
      t0 = Clock::now();
      cpu0 = ProcessCpuSeconds();
    }
    glfwPollEvents();
    ImGui_ImplOpenGL3_NewFrame();
    ImGui_ImplGlfw_NewFrame();
    if (mouse_x >= 0) {
      io.MousePos = ImVec2(mouse_x, mouse_y);
    } else if (timed) {
      io.MousePos = ImVec2(-FLT_MAX, -FLT_MAX);  // xvfb parks the pointer mid-screen
    }
    const Clock::time_point ui0 = Clock::now();
    ImGui::NewFrame();
    viewer.Frame();
    ImGui::Render();
    const Clock::time_point ui1 = Clock::now();
    int fw = 0, fh = 0;
    glfwGetFramebufferSize(window, &fw, &fh);
    glViewport(0, 0, fw, fh);
    const ImVec4 bg = ImGui::GetStyle().Colors[ImGuiCol_WindowBg];  // the main window has none
    glClearColor(bg.x, bg.y, bg.z, 1.0f);
    glClear(GL_COLOR_BUFFER_BIT);
    ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
    if (frames > 0) glFinish();  // timed runs: charge the renderer's work to this frame
    if (frame >= kWarmup) {
      ui_ms += std::chrono::duration<double, std::milli>(ui1 - ui0).count();
      gl_ms += std::chrono::duration<double, std::milli>(Clock::now() - ui1).count();
    }
    const bool last_frame = total > 0 && frame == total - 1;
    std::string shot_path;
    if (!screenshot.empty() && last_frame) shot_path = screenshot;
    if (viewer.TakeScreenshotRequest()) {
      shot_path = "kvsim-viz-" + std::string(viewer.current_panel().id()) + "-" +
                  std::to_string(++shot_count) + ".png";
    }
    if (!shot_path.empty()) {
      glFinish();
      kvsim::Status s = kvsim::viz::WritePng(shot_path, ReadBackBuffer(fw, fh));
      if (!s.ok()) {
        std::fprintf(stderr, "kvsim-viz: error: %s\n", s.message().c_str());
        rc = shot_path == screenshot ? kExitWriteFailed : 1;
      } else if (shot_path == screenshot) {
        std::printf("wrote %s (%dx%d, panel %s)\n", shot_path.c_str(), fw, fh,
                    viewer.current_panel().id());
        // The picture shows an error instead of data: say so and fail, for scripts and CI.
        if (const std::string err = viewer.panel_error(); !err.empty()) {
          std::fprintf(stderr, "kvsim-viz: error: the %s panel shows an error: %s\n",
                       viewer.current_panel().id(), err.c_str());
          rc = 2;
        }
      } else {
        viewer.SetStatus("saved " + shot_path);
      }
    }
    glfwSwapBuffers(window);
    const Clock::time_point now = Clock::now();
    if (frame > kWarmup) {
      worst_ms = std::max(worst_ms, std::chrono::duration<double, std::milli>(now - last).count());
    }
    last = now;
    if (viewer.WindowTitle() != title) {
      title = viewer.WindowTitle();
      glfwSetWindowTitle(window, title.c_str());
    }
  }
  if (frames > kWarmup + 1) {
    glFinish();
    const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    const int timed_frames = frames - kWarmup;
    const double cpu = ProcessCpuSeconds() - cpu0;
    const ImDrawData* dd = ImGui::GetDrawData();
    std::printf(
        "panel %s: %d frames in %.3f s = %.1f fps (mean %.2f ms: UI %.2f ms, GL %.2f ms; "
        "worst %.2f ms) at %dx%d, %d vertices/frame; CPU %.2f ms/frame over all threads "
        "= %.1f frames per CPU-second\n",
        viewer.current_panel().id(), timed_frames, secs, timed_frames / secs,
        1000.0 * secs / timed_frames, ui_ms / timed_frames, gl_ms / timed_frames, worst_ms, width,
        height, dd ? dd->TotalVtxCount : 0, 1000.0 * cpu / timed_frames, timed_frames / cpu);
  }
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(window);
  glfwTerminate();
  return rc;
}
