print("vlogger")
