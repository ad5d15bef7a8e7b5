#ifndef KB_BOT_VERSION_H
#define KB_BOT_VERSION_H

#define KERNELBOT_VERSION "0.1.0"

#endif
