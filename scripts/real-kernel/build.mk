# Compiled by run.sh: a C build for the real-kernel pressure runs (libzstd from the cargo registry).
SRCS := $(wildcard lib/common/*.c lib/compress/*.c lib/decompress/*.c lib/dictBuilder/*.c lib/legacy/*.c)
OBJS := $(SRCS:.c=.o)
all: $(OBJS)
%.o: %.c
	gcc -O2 -g -Ilib -Ilib/common -DZSTD_LEGACY_SUPPORT=5 -c $< -o $@
clean:
	rm -f $(OBJS)
