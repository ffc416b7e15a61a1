print("todayctl")
