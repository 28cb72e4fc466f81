import SecureCore
import TestSupport
