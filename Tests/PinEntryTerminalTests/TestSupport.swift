import PinStrength
import SecureCore
import TestSupport

/// Today for the date rule of the check path: the year window is 1926–2036.
let today = FixedToday(CalendarDay(year: 2026, month: 11, day: 30))
