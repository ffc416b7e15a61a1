print("todayd")
