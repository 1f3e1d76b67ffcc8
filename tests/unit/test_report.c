/* report: the time of a row as localtime_r and strftime would show it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "index/model/report.h"
#include "tap.h"

/* How many of [from, to) tcfs_report_time shows otherwise than
 * strftime("%F %T") of localtime_r, walked a second at a time. */
static int walk(int64_t from, int64_t to)
{
	int wrong = 0;

	for (int64_t t = from; t < to; t++) {
		time_t tt = (time_t)t;
		struct tm tm;
		char want[64], got[64];

		localtime_r(&tt, &tm);
		strftime(want, sizeof(want), "%F %T", &tm);
		tcfs_report_time(t * 1000000000, got, sizeof(got));
		if (strcmp(want, got) != 0 && wrong++ < 3)
			printf("# %lld: %s, not %s\n", (long long)t, want, got);
	}
	return wrong;
}

int main(void)
{
	/* Three hours either side of an offset's change (a leap second in
	 * right/UTC); a zone this machine lacks is UTC, still a check. */
	static const struct {
		const char *tz;
		int64_t at;
		const char *what;
	} z[] = {
		{ "America/New_York", 1772953200, "summer time begins" },
		{ "America/New_York", 1793512800, "and ends (an hour twice)" },
		{ "Australia/Lord_Howe", 1775314800, "a half-hour shift" },
		{ "Africa/Monrovia", 63593070, "an offset of -0:44:30 ends" },
		{ "right/UTC", 1483228826, "a leap second, 23:59:60" },
	};
	char buf[64], small[8];

	for (size_t i = 0; i < sizeof(z) / sizeof(z[0]); i++) {
		setenv("TZ", z[i].tz, 1);
		tzset();
		/* From far off: what this thread showed last is not this
		 * zone's minute. */
		tcfs_report_time(0, buf, sizeof(buf));
		tap_ok(walk(z[i].at - 3 * 3600, z[i].at + 3 * 3600) == 0,
		       "%s, %s: every second as strftime shows it", z[i].tz,
		       z[i].what);
	}
	setenv("TZ", "UTC", 1);
	tzset();
	tcfs_report_time(INT64_C(1764300000) * 1000000000, buf, sizeof(buf));
	tap_ok(!strcmp(tcfs_report_time(INT64_C(1764300001) * 1000000000, buf,
					sizeof(buf)),
		       "2025-11-28 03:20:01"),
	       "the next second of the same minute: %s", buf);
	tap_ok(!strcmp(tcfs_report_time(INT64_C(1764299999) * 1000000000, buf,
					sizeof(buf)),
		       "2025-11-28 03:19:59"),
	       "and the second before it, in the minute before: %s", buf);
	tcfs_report_time(INT64_C(1764300000) * 1000000000, buf, sizeof(buf));
	tap_ok(!strcmp(tcfs_report_time(INT64_C(1764300001) * 1000000000,
					small, sizeof(small)), "?"),
	       "a buffer too small for the time gets \"?\", as before");
	tap_ok(!strcmp(tcfs_report_time(-INT64_C(1000000000), buf,
					sizeof(buf)), "1969-12-31 23:59:59"),
	       "a time before the epoch: %s", buf);
	return tap_done();
}
