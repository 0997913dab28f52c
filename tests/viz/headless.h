// A headless ImGui context for viewer tests: no window, no GL, no DISPLAY (build-notes §3).
// Keys use GLFW's key codes, as the GLFW backend of ImGui 1.86 does.
#pragma once

#include <imgui.h>

namespace kvsim::viz::testing {

inline constexpr int kKeyTab = 258, kKeyRight = 262, kKeyLeft = 263, kKeyDown = 264, kKeyUp = 265,
                     kKeyPageUp = 266, kKeyPageDown = 267, kKeyHome = 268, kKeyEnd = 269,
                     kKeyEscape = 256, kKeyEnter = 257, kKeyBackspace = 259, kKeyDelete = 261,
                     kKeySpace = 32, kKeyInsert = 260;

class HeadlessImGui {
 public:
  HeadlessImGui(float w = 1600, float h = 900) {
    ctx_ = ImGui::CreateContext();
    ImGuiIO& io = ImGui::GetIO();
    io.IniFilename = nullptr;
    io.DisplaySize = ImVec2(w, h);
    io.DeltaTime = 1.0f / 60.0f;
    unsigned char* px = nullptr;
    int tw = 0, th = 0;
    io.Fonts->GetTexDataAsRGBA32(&px, &tw, &th);  // builds the atlas; nothing is uploaded
    io.KeyMap[ImGuiKey_Tab] = kKeyTab;
    io.KeyMap[ImGuiKey_LeftArrow] = kKeyLeft;
    io.KeyMap[ImGuiKey_RightArrow] = kKeyRight;
    io.KeyMap[ImGuiKey_UpArrow] = kKeyUp;
    io.KeyMap[ImGuiKey_DownArrow] = kKeyDown;
    io.KeyMap[ImGuiKey_PageUp] = kKeyPageUp;
    io.KeyMap[ImGuiKey_PageDown] = kKeyPageDown;
    io.KeyMap[ImGuiKey_Home] = kKeyHome;
    io.KeyMap[ImGuiKey_End] = kKeyEnd;
    io.KeyMap[ImGuiKey_Insert] = kKeyInsert;
    io.KeyMap[ImGuiKey_Delete] = kKeyDelete;
    io.KeyMap[ImGuiKey_Backspace] = kKeyBackspace;
    io.KeyMap[ImGuiKey_Space] = kKeySpace;
    io.KeyMap[ImGuiKey_Enter] = kKeyEnter;
    io.KeyMap[ImGuiKey_Escape] = kKeyEscape;
    io.KeyMap[ImGuiKey_A] = 'A';
    io.KeyMap[ImGuiKey_C] = 'C';
    io.KeyMap[ImGuiKey_V] = 'V';
    io.KeyMap[ImGuiKey_X] = 'X';
    io.KeyMap[ImGuiKey_Y] = 'Y';
    io.KeyMap[ImGuiKey_Z] = 'Z';
    io.MousePos = ImVec2(-FLT_MAX, -FLT_MAX);
    // What ImGui's OpenGL3 renderer declares: draw lists may pass 64k vertices.
    io.BackendFlags |= ImGuiBackendFlags_RendererHasVtxOffset;
  }
  ~HeadlessImGui() { ImGui::DestroyContext(ctx_); }
  HeadlessImGui(const HeadlessImGui&) = delete;
  HeadlessImGui& operator=(const HeadlessImGui&) = delete;

  // One frame around `draw`; returns whether the draw data came out valid.
  template <typename F>
  bool Frame(F&& draw) {
    ImGui::NewFrame();
    draw();
    ImGui::Render();
    return ImGui::GetDrawData() && ImGui::GetDrawData()->Valid;
  }
  // Presses `key` for one frame and releases it on the next.
  template <typename F>
  void Press(int key, F&& draw, bool ctrl = false, bool shift = false) {
    ImGuiIO& io = ImGui::GetIO();
    io.KeyCtrl = ctrl;
    io.KeyShift = shift;
    io.KeysDown[key] = true;
    Frame(draw);
    io.KeysDown[key] = false;
    io.KeyCtrl = io.KeyShift = false;
    Frame(draw);
  }

 private:
  ImGuiContext* ctx_ = nullptr;
};

}  // namespace kvsim::viz::testing
