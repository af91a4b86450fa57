/* header_alone.c - the public header compiles with nothing before it. */
#include "lib/perceptron.h"

int main(void)
{
    return PC_OK;
}
