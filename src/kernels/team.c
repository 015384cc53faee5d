// Team mode's per-thread flag (kernels/team.h).
#include "kernels/team.h"

_Thread_local int team_mode;
