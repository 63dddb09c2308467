#include "config.h"
#include "tls.h"
