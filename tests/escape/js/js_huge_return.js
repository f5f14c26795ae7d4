// attack: return a value too large for the host to hold
// category: js/exhaustion
// expect: kind=result_too_large
return "x".repeat(8 * 1024 * 1024);
