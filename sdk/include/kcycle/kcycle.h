/* The kcycle SDK: include this one header to write a plugin. */
#ifndef KCYCLE_H
#define KCYCLE_H

#include "version.h"
#include "status.h"
#include "resource.h"
#include "group.h"
#include "host.h"
#include "plugin.h"
#include "pod.h"
#include "node.h"
#include "cycle.h"
#include "score.h"
#include "preemption.h"
#include "args.h"

#endif
