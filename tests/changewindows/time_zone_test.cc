#include "changewindows/time_zone.h"

#include <gtest/gtest.h>

#include "tests/changewindows/test_time.h"

namespace lockstep::changewindows {
namespace {

using testing::civil;
using testing::utc;

TimeZone zone(const std::string& name) {
  StatusOr<TimeZone> z = TimeZone::load(name);
  EXPECT_TRUE(z.isOk()) << name << ": " << z.status().toString();
  return *z;
}

TEST(TimeZone, BerlinSpringForwardSkippedTimeTakesTheOffsetBeforeTheGap) {
  const TimeZone berlin = zone("Europe/Berlin");
  // 2026-03-29: 02:00 CET becomes 03:00 CEST (01:00Z). 02:30 does not exist; RFC 5545
  // 3.3.5 reads it with the offset before the gap, +01:00: 01:30Z, which is 03:30 CEST.
  EXPECT_EQ(berlin.toInstant(civil("2026-03-29T01:59:59")), utc("2026-03-29T00:59:59"));
  EXPECT_EQ(berlin.toInstant(civil("2026-03-29T02:30:00")), utc("2026-03-29T01:30:00"));
  EXPECT_EQ(berlin.toInstant(civil("2026-03-29T03:00:00")), utc("2026-03-29T01:00:00"));
  EXPECT_EQ(berlin.format(utc("2026-03-29T01:30:00")), "2026-03-29T03:30:00+02:00");
}

TEST(TimeZone, BerlinFallBackRepeatedTimeIsItsFirstOccurrence) {
  const TimeZone berlin = zone("Europe/Berlin");
  // 2026-10-25: 03:00 CEST becomes 02:00 CET (01:00Z); 02:30 happens twice, first in CEST.
  EXPECT_EQ(berlin.toInstant(civil("2026-10-25T02:30:00")), utc("2026-10-25T00:30:00"));
  EXPECT_EQ(berlin.toInstant(civil("2026-10-25T03:00:00")), utc("2026-10-25T02:00:00"));
  EXPECT_TRUE(berlin.toCivil(utc("2026-10-25T01:30:00")) == civil("2026-10-25T02:30:00"));
  EXPECT_EQ(berlin.format(utc("2026-10-25T01:30:00")), "2026-10-25T02:30:00+01:00");
}

TEST(TimeZone, NewYorkBothTransitions) {
  const TimeZone ny = zone("America/New_York");
  // 2026-03-08 02:00 EST -> 03:00 EDT (07:00Z); 2026-11-01 02:00 EDT -> 01:00 EST (06:00Z).
  EXPECT_EQ(ny.toInstant(civil("2026-03-08T02:30:00")), utc("2026-03-08T07:30:00"));
  EXPECT_EQ(ny.toInstant(civil("2026-03-08T03:00:00")), utc("2026-03-08T07:00:00"));
  EXPECT_EQ(ny.toInstant(civil("2026-11-01T01:30:00")), utc("2026-11-01T05:30:00"));
  EXPECT_EQ(ny.format(utc("2026-11-01T06:30:00")), "2026-11-01T01:30:00-05:00");
}

TEST(TimeZone, RefusesUnknownZonesAndNamesThatAreNotZoneNames) {
  for (const char* name :
       {"Europe/Berlim", "", "localtime", "../../../etc/passwd", "/etc/localtime", "Europe//Berlin",
        "Europe/", "Europe/Berlin\n", "Europe/./Berlin", "CET+1:00"}) {
    StatusOr<TimeZone> z = TimeZone::load(name);
    EXPECT_FALSE(z.isOk()) << "\"" << name << "\" loaded";
  }
  EXPECT_NE(TimeZone::load("Europe/Berlim").status().message().find("unknown time zone"),
            std::string::npos);
  EXPECT_TRUE(TimeZone::load("UTC").isOk());
  EXPECT_TRUE(TimeZone::load("Etc/GMT+5").isOk());
}

TEST(CivilArithmetic, DaysKeepTheWallClockAndSecondsNormalise) {
  EXPECT_TRUE(addCivil(civil("2026-03-27T16:00:00"), 3) == civil("2026-03-30T16:00:00"));
  EXPECT_TRUE(addCivil(civil("2026-01-31T23:00:00"), 0, 3600) == civil("2026-02-01T00:00:00"));
  EXPECT_TRUE(addCivil(civil("2028-02-28T12:00:00"), 1) == civil("2028-02-29T12:00:00"));
  EXPECT_EQ(civilDifference(civil("2026-03-30T00:00:00"), civil("2026-03-29T00:00:00")), 86400);
}

}  // namespace
}  // namespace lockstep::changewindows
