// The version the Makefile puts in (core/version.h). Only this file sees it, so a new commit rebuilds
// this object and relinks, nothing else.
#include "core/version.h"

#ifndef VITMAE_VERSION
#define VITMAE_VERSION "unknown"   // built without the Makefile
#endif

const char *vitmae_version(void) { return VITMAE_VERSION; }
