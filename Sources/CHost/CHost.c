// Most of the module is the inline functions in include/CHost.h; what needs feature macros that would change
// the system headers Swift's Glibc module was built with lives here.
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "CHost.h"

int vlogger_open_pty(char *name, size_t size) {
    int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (master < 0) return -1;
    const char *slave = NULL;
    if (grantpt(master) != 0 || unlockpt(master) != 0 || (slave = ptsname(master)) == NULL || strlen(slave) + 1 > size) {
        close(master);
        return -1;
    }
    memcpy(name, slave, strlen(slave) + 1);
    return master;
}

#include <linux/gpio.h>
#include <linux/spi/spidev.h>
#include <stddef.h>

void vlogger_kernel_abi(unsigned long *out, int count) {
    unsigned long v[20] = {
        sizeof(struct spi_ioc_transfer),
        SPI_IOC_MESSAGE(1),
        SPI_IOC_WR_MODE,
        SPI_IOC_WR_MAX_SPEED_HZ,
        offsetof(struct spi_ioc_transfer, speed_hz),
        offsetof(struct spi_ioc_transfer, bits_per_word),
        sizeof(struct gpio_v2_line_request),
        GPIO_V2_GET_LINE_IOCTL,
        GPIO_V2_LINE_SET_VALUES_IOCTL,
        GPIO_V2_LINE_GET_VALUES_IOCTL,
        offsetof(struct gpio_v2_line_request, consumer),
        offsetof(struct gpio_v2_line_request, config),
        offsetof(struct gpio_v2_line_request, config.num_attrs),
        offsetof(struct gpio_v2_line_request, config.attrs),
        offsetof(struct gpio_v2_line_request, num_lines),
        offsetof(struct gpio_v2_line_request, fd),
        offsetof(struct gpio_v2_line_request, config.attrs[0].attr.values),
        offsetof(struct gpio_v2_line_request, config.attrs[0].mask),
        GPIO_V2_LINE_ATTR_ID_OUTPUT_VALUES,
        SPI_NO_CS,
    };
    for (int i = 0; i < count && i < 20; i++) out[i] = v[i];
}
