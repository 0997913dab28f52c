// Force-included into Debian's imgui_impl_opengl3.cpp (1.86) instead of its bundled gl3w
// loader, whose load_procs() writes past the end of imgl3wProcs (more names than slots:
// UBSan flags imgui_impl_opengl3_loader.h:751). With IMGUI_IMPL_OPENGL_LOADER_CUSTOM the
// backend uses whatever GL declarations are in scope; these are the core-profile prototypes,
// resolved at link time by libGL (GLVND exports every core entry point), so there is no
// run-time loader to get wrong.
#pragma once

#ifndef GL_GLEXT_PROTOTYPES
#define GL_GLEXT_PROTOTYPES 1
#endif
#include <GL/glcorearb.h>
