/*
 * pipeline/report/report_py.c: the drop-in module and its pytest, kept as
 * real Python files next to this one (loader.py, test_kernel.py, so they
 * can be read, linted and tested as Python) and compiled in as strings;
 * the Makefile turns each into a C string literal under $(BUILD)/gen.
 */
#include "pipeline/report/report_internal.h"

/* "" first: a linter that does not find the generated file still parses this */
const char report_loader_py[] = ""
#include "pipeline/report/loader.py.inc"
	;

const char report_test_py[] = ""
#include "pipeline/report/test_kernel.py.inc"
	;
