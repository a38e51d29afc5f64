/* Stands in for libGLX.so.0 in the wheel (scripts/build_wheel.sh). Debian's libopencv_core links GLX for OpenGL
 * interop (cv::ogl), which kgtrain never calls; the real library would bring the whole X11 client stack (libGLX,
 * libGLdispatch, libX11, libxcb, libXau, libXdmcp, libbsd, libmd: 8 libraries) into the wheel. opencv_core is
 * linked with BIND_NOW, so its three GLX symbols must exist: they answer "no current OpenGL context". */
#include <stddef.h>

void* glXGetCurrentContext(void) { return NULL; }
void* glXGetCurrentDisplay(void) { return NULL; }
void (*glXGetProcAddressARB(const unsigned char* name))(void) {
  (void)name;
  return NULL;
}
