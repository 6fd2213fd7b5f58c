package planner

// mountInfoPath is the mount table configWritable reads (byMounts).
const mountInfoPath = "/proc/self/mountinfo"
