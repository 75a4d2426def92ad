######### global settings  #########
GPU = True                                  # running on GPU is highly suggested
MODEL = 'resnet18'                          # model arch: resnet18, alexnet, resnet50, densenet161
DATASET = 'places365'                       # model trained on: places365 or imagenet
FEATURE_NAMES = ['layer4']
BATCH_SIZE = 128
OUTPUT_FOLDER = "result/pytorch_" + MODEL + "_" + DATASET
DATA_DIRECTORY = 'dataset/broden1_224'
CATAGORIES = ["object", "part", "scene", "texture", "color"]
